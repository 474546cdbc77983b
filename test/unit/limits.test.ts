/**
 * The wire's text limit (src/plan/protocol/limits.ts): the schema, the CLI, the IPC and the
 * shared check count characters the same way. The numeric tunables are test/unit/tunables.test.ts.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseCli } from '../../src/peer/cli'
import { ParentMessage } from '../../src/peer/ipc/protocol'
import { goalTextProblem, TEXT_MAX_CHARS } from '../../src/plan/protocol/limits'
import { clipText, textLength } from '../../src/plan/protocol/text'
import { TUNABLES } from '../../src/plan/protocol/tunables'
import { Goal, PEER_NAME_MAX, PeerName } from '../../src/plan/protocol/schemas'

const quiet = { out: () => {}, err: () => {}, env: {} }

describe('limits and defaults', () => {
  it('the goal text limit is the wire\'s, counted in characters (code points) by the schema, the CLI, the IPC and the shared check', () => {
    assert.equal(Goal.shape.depth.maxValue, TUNABLES.maxDepth.max)
    // 4000 characters outside the BMP are 8000 UTF-16 code units: still 4000 characters.
    const full = '🗾'.repeat(TEXT_MAX_CHARS)
    const over = full + 'x'
    assert.deepEqual([full.length, textLength(full), textLength(over)], [2 * TEXT_MAX_CHARS, TEXT_MAX_CHARS, TEXT_MAX_CHARS + 1])
    assert.equal(Goal.shape.text.safeParse(full).success, true)
    const refused = Goal.shape.text.safeParse(over)
    assert.equal(refused.success, false)
    assert.match(refused.error?.issues[0]?.message ?? '', new RegExp(`at most ${TEXT_MAX_CHARS} characters`))
    assert.equal(goalTextProblem(full), null)
    assert.equal(goalTextProblem(over), `the goal is ${TEXT_MAX_CHARS + 1} characters long; the limit is ${TEXT_MAX_CHARS}`)
    let err = ''
    const io = { ...quiet, err: (s: string) => { err += s } }
    assert.equal(parseCli(['--role', 'observer', '--submit-goal', full], io).kind, 'run')
    assert.deepEqual(parseCli(['--role', 'observer', '--submit-goal', over], io), { kind: 'exit', code: 2 })
    assert.match(err, new RegExp(`--submit-goal.*expected 1-${TEXT_MAX_CHARS} characters of goal text \\(this one has ${TEXT_MAX_CHARS + 1}\\)`))
    const submit = (text: string) => ParentMessage.safeParse({ type: 'submit-goal', request_id: 'r1', text }).success
    assert.deepEqual([submit(full), submit(over)], [true, false])
    // Every other text field and the peer name count the same way.
    assert.equal(PeerName.safeParse('🗾'.repeat(PEER_NAME_MAX)).success, true)
    assert.equal(PeerName.safeParse('🗾'.repeat(PEER_NAME_MAX + 1)).success, false)
    // Producers clip by characters and never cut a surrogate pair in half.
    assert.equal(clipText('a🗾b🗾', 2), 'a🗾')
    assert.equal(textLength(clipText(over, TEXT_MAX_CHARS)), TEXT_MAX_CHARS)
    assert.equal(clipText('short', 10), 'short')
  })
})
