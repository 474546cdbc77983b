/**
 * Goal text from the command line follows the wire's text rule (DESIGN R1): control
 * characters other than tab, newline and carriage return are refused with exit 2, naming the flag.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseCli } from '../../src/peer/cli'

function run (goal: string): { code: number | null, err: string } {
  let err = ''
  const r = parseCli(['--role', 'observer', '--no-mdns', '--submit-goal', goal], { out: () => {}, err: (s) => { err += s }, env: {} })
  return { code: r.kind === 'exit' ? r.code : null, err }
}

describe('--submit-goal text', () => {
  it('refuses control characters, naming the flag', () => {
    for (const goal of ['Plan\u0000 a trip', 'Plan \u001b[2Ja trip', 'Plan\u007f']) {
      const r = run(goal)
      assert.equal(r.code, 2, JSON.stringify(goal))
      assert.match(r.err, /--submit-goal/)
      assert.match(r.err, /control characters are not allowed in goal text/)
    }
  })

  it('accepts tab, newline and any script', () => {
    for (const goal of ['Plan a trip\tto Japan', 'Plan a trip\nto 日本 🗾']) assert.equal(run(goal).code, null, JSON.stringify(goal))
  })
})
