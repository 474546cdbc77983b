/**
 * Claim time rules on every ingest path (DESIGN R5): verifyIncoming refuses a claim or renewal
 * dated beyond the tolerance in the future whether it comes live (gossip, push) or as history
 * (sync, the state log on disk), and refuses old ones only when live. Real Ed25519 signatures.
 */
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { pino } from 'pino'
import { DropCounters } from '../../src/peer/net/checks/drops'
import { StateLog } from '../../src/peer/net/storage/stateLog'
import { verifyIncoming, type VerifyContext } from '../../src/peer/net/checks/verify'
import { canonicalJson } from '../../src/plan/protocol/envelope'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { toJsonlLine } from '../../src/plan/state/jsonl'
import { accepted, claim, newIdentity, promptNode, proposal, renewal, rootGoal, score, sec, signedEnvelope, T0 } from '../support/fixtures'

const NOW = T0 + sec(100)
const ctx: VerifyContext = { swarm: 'test', has: () => false, now: () => NOW }
const silent = pino({ level: 'silent' })

async function setup (): Promise<{ sign: (kind: 'claim' | 'renew', at: number) => Promise<AnyEnvelope> }> {
  const { key, peerId } = await newIdentity()
  const g = rootGoal()
  const n = promptNode(accepted(proposal(g.goal_id, ['Book flights'])), 0)
  const sign = async (kind: 'claim' | 'renew', at: number): Promise<AnyEnvelope> => {
    const c = claim(n.node_id, g.goal_id, peerId, kind === 'claim' ? at : NOW - sec(2))
    return (kind === 'claim' ? await signedEnvelope(key, 'claim', c) : await signedEnvelope(key, 'renew', renewal(c, at))) as AnyEnvelope
  }
  return { sign }
}

const verdict = async (env: AnyEnvelope, live: boolean): Promise<{ ok: boolean, reason?: string, detail?: string }> => {
  const v = await verifyIncoming({ data: canonicalJson(env), live }, ctx)
  return v.ok ? { ok: true } : { ok: false, reason: v.reason, detail: v.detail }
}

describe('votes and accepted splits from the future (DESIGN R4 "Evidence")', () => {
  it('refuses a score or an accepted split dated beyond the tolerance ahead, live and as history, and takes an old one', async () => {
    const { key, peerId } = await newIdentity()
    const g = rootGoal()
    const p = proposal(g.goal_id, ['Book flights', 'Book hotels'])
    for (const [at, ok] of [[NOW + sec(60), false], [NOW + sec(5), true], [NOW - sec(3600), true]] as const) {
      const vote = await signedEnvelope(key, 'score', score(p, peerId, 0.9, { at })) as AnyEnvelope
      const split = await signedEnvelope(key, 'accepted', accepted(p, { confirming: [{ scorer_peer: peerId, score: 0.9 }], at })) as AnyEnvelope
      for (const env of [vote, split]) {
        for (const live of [true, false]) {
          const v = await verdict(env, live)
          assert.equal(v.ok, ok, `${env.kind} at ${(at - NOW) / 1e6} s, live=${String(live)}: ${v.detail ?? ''}`)
          if (!ok) assert.match(v.detail ?? '', new RegExp(`^${env.kind === 'score' ? 'score' : 'accepted'} timestamp is 60\\.000 s ahead of local time \\(tolerance 5 s\\)$`))
        }
      }
    }
  })
})

describe('claim time rules on every path (DESIGN R5)', () => {
  it('refuses a claim or renewal from an hour in the future live and as history alike', async () => {
    const { sign } = await setup()
    for (const kind of ['claim', 'renew'] as const) {
      const env = await sign(kind, NOW + sec(3600))
      for (const live of [true, false]) {
        const v = await verdict(env, live)
        assert.equal(v.ok, false, `${kind} live=${String(live)}`)
        assert.equal(v.reason, 'clock_skew')
        assert.match(v.detail ?? '', new RegExp(`^${kind} timestamp is 3600\\.000 s ahead of local time \\(tolerance 5 s\\)$`))
      }
    }
  })

  it('accepts one within the tolerance on every path, and an old one only as history', async () => {
    const { sign } = await setup()
    for (const kind of ['claim', 'renew'] as const) {
      const near = await sign(kind, NOW + sec(5))
      assert.deepEqual([(await verdict(near, true)).ok, (await verdict(near, false)).ok], [true, true], `${kind} +5 s`)
      const old = await sign(kind, NOW - sec(3600))
      const live = await verdict(old, true)
      assert.deepEqual([live.ok, live.reason], [false, 'clock_skew'])
      assert.match(live.detail ?? '', /3600\.000 s behind local time/)
      assert.equal((await verdict(old, false)).ok, true, `${kind} from an hour ago is history`)
    }
  })

  it('drops a future claim found in the state log on reload, counts it and keeps the rest', async (t) => {
    const { sign } = await setup()
    const dir = await mkdtemp(path.join(tmpdir(), 'goal-swarm-timerules-'))
    t.after(async () => { await rm(dir, { recursive: true, force: true }) })
    const good = await sign('claim', NOW - sec(30))
    const future = await sign('claim', NOW + sec(3600))
    const file = path.join(dir, 'state.jsonl')
    await writeFile(file, [good, future].map(toJsonlLine).join(''))
    const drops = new DropCounters(silent)
    const loaded = await new StateLog(dir, silent).load({ swarm: 'test', now: () => NOW }, drops)
    assert.deepEqual(loaded, [good])
    assert.equal(drops.snapshot().clock_skew, 1)
    assert.equal(await readFile(file, 'utf8'), toJsonlLine(good), 'the log is rewritten without the refused line')
  })
})
