import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CLAIM_TOLERANCE_MS, DEFAULT_MAX_HOLD_MS, SETTLE_FLOOR_MS, claimRounds, claimStamp, claimWithinTolerance, leaseEnd, resolveClaims, stampWithinTolerance, wonRoundAt, type LeaseState } from '../../src/plan/rules/claims'
import { TUNABLES } from '../../src/plan/protocol/tunables'
import { T0, claim, ms, renewal, sec } from '../support/fixtures'

const NODE = '00000000000000aa'
const GOAL = '00000000000000bb'
const c = (peer: string, at: number, leaseMs = 15_000): ReturnType<typeof claim> => claim(NODE, GOAL, peer, at, leaseMs)

function holderOf (s: LeaseState): string | null {
  return s.state === 'settling' || s.state === 'held' ? s.holder.claimer_peer : s.state === 'lapsed' ? s.lastHolder.claimer_peer : null
}

function permutations<T> (xs: T[]): T[][] {
  if (xs.length <= 1) return [xs]
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]))
}

describe('claim tolerance (DESIGN R5)', () => {
  it('accepts claims within ±5 s of local time, inclusive', () => {
    assert.equal(CLAIM_TOLERANCE_MS, 5000)
    assert.equal(claimWithinTolerance(T0, T0), true)
    assert.equal(claimWithinTolerance(T0 - sec(5), T0), true)
    assert.equal(claimWithinTolerance(T0 + sec(5), T0), true)
    assert.equal(claimWithinTolerance(T0 - sec(5) - 1, T0), false)
    assert.equal(claimWithinTolerance(T0 + sec(5) + 1, T0), false)
    assert.equal(claimWithinTolerance(T0 + sec(60), T0), false)
  })

  it('takes another tolerance in ms', () => {
    assert.equal(claimWithinTolerance(T0 + ms(100), T0, 100), true)
    assert.equal(claimWithinTolerance(T0 + ms(101), T0, 100), false)
  })
})

describe('resolveClaims (DESIGN R5)', () => {
  it('is unclaimed with no claims', () => {
    assert.deepEqual(resolveClaims([], [], T0), { state: 'unclaimed' })
  })

  it('settles for the window after the earliest claim (default 100 ms), then holds until the lease ends', () => {
    assert.equal(SETTLE_FLOOR_MS, 100)
    const a = c('ex-a', T0)
    assert.deepEqual(resolveClaims([a], [], T0), { state: 'settling', holder: a, leaseUntilUs: T0 + sec(15) })
    assert.equal(resolveClaims([a], [], T0 + 100_000 - 1).state, 'settling')
    assert.deepEqual(resolveClaims([a], [], T0 + 100_000), { state: 'held', holder: a, leaseUntilUs: T0 + sec(15) })
    assert.equal(resolveClaims([a], [], T0 + sec(2) - 1, 2000).state, 'settling')
    assert.equal(resolveClaims([a], [], T0 + sec(2), 2000).state, 'held')
    assert.equal(resolveClaims([a], [], T0 + sec(15) - 1).state, 'held')
    assert.deepEqual(resolveClaims([a], [], T0 + sec(15)), { state: 'lapsed', lastHolder: a, capped: false })
  })

  it('is settling also before the claim time (a claim slightly in the future)', () => {
    assert.equal(resolveClaims([c('ex-a', T0 + sec(3))], [], T0).state, 'settling')
  })

  it('honours a custom settle window', () => {
    const a = c('ex-a', T0)
    assert.equal(resolveClaims([a], [], T0 + ms(500), 500).state, 'held')
    assert.equal(resolveClaims([a], [], T0 + ms(499), 500).state, 'settling')
    assert.equal(resolveClaims([a], [], T0 + ms(1), 0).state, 'held')
  })

  it('lets the earliest claimed_at win, in any arrival order', () => {
    const claims = [c('ex-c', T0 + ms(300)), c('ex-a', T0 + ms(100)), c('ex-b', T0 + ms(200))]
    for (const order of permutations(claims)) {
      assert.equal(holderOf(resolveClaims(order, [], T0 + ms(300))), 'ex-a')
      assert.equal(holderOf(resolveClaims(order, [], T0 + sec(5))), 'ex-a')
    }
  })

  it('breaks a claimed_at tie by the lowest peer id', () => {
    const claims = [c('ex-b', T0), c('ex-a', T0), c('ex-c', T0)]
    for (const order of permutations(claims)) assert.equal(holderOf(resolveClaims(order, [], T0 + sec(3))), 'ex-a')
  })

  it('compares claim times in µs, not ms', () => {
    const claims = [c('ex-a', T0 + 2), c('ex-b', T0 + 1)]
    assert.equal(holderOf(resolveClaims(claims, [], T0 + sec(3))), 'ex-b')
  })

  it('compares claim times as instants, whatever offset they were written with', () => {
    const a = { ...c('ex-a', T0 + 1), claimed_at: '2025-01-02T04:04:05.000001+01:00' }
    const b = c('ex-b', T0 + 2)
    assert.equal(holderOf(resolveClaims([b, a], [], T0 + sec(3))), 'ex-a')
  })

  it("counts one peer's repeated claim at the same time once (lowest message key)", () => {
    const a1 = c('ex-a', T0, 15_000)
    const a2 = c('ex-a', T0, 30_000)
    const r1 = resolveClaims([a1, a2], [], T0 + sec(20))
    const r2 = resolveClaims([a2, a1], [], T0 + sec(20))
    assert.deepEqual(r1, r2)
  })

  it('extends the lease with renewals of the same claim', () => {
    const a = c('ex-a', T0)
    const renewals = [renewal(a, T0 + sec(10)), renewal(a, T0 + sec(20))]
    assert.equal(leaseEnd(a, renewals), T0 + sec(35))
    assert.deepEqual(resolveClaims([a], renewals, T0 + sec(30)), { state: 'held', holder: a, leaseUntilUs: T0 + sec(35) })
    assert.equal(resolveClaims([a], [...renewals].reverse(), T0 + sec(35)).state, 'lapsed')
  })

  it('ignores renewals by another peer or for another claim time', () => {
    const a = c('ex-a', T0)
    const b = c('ex-b', T0 + sec(1))
    const foreign = [renewal(b, T0 + sec(10)), renewal(c('ex-a', T0 + 5), T0 + sec(10)), { ...renewal(a, T0 + sec(10)), node_id: '00000000000000cc' }]
    assert.equal(leaseEnd(a, foreign), T0 + sec(15))
  })

  it('does not revive a lapsed lease with a late renewal', () => {
    const a = c('ex-a', T0)
    assert.equal(leaseEnd(a, [renewal(a, T0 + sec(16))]), T0 + sec(15))
    // a renewal exactly at the end still counts
    assert.equal(leaseEnd(a, [renewal(a, T0 + sec(15))]), T0 + sec(30))
    // a chain of timely renewals keeps it alive, however they arrive
    assert.equal(leaseEnd(a, [renewal(a, T0 + sec(28)), renewal(a, T0 + sec(14))]), T0 + sec(43))
  })

  it('after a lapse, a later claim wins a new round; claims made during the lease do not', () => {
    const a = c('ex-a', T0)
    const during = c('ex-b', T0 + sec(5)) // competed and lost while ex-a held the lease
    const after = c('ex-c', T0 + sec(16))
    const claims = [a, during, after]
    for (const order of permutations(claims)) {
      assert.equal(holderOf(resolveClaims(order, [], T0 + sec(10))), 'ex-a')
      assert.deepEqual(resolveClaims(order, [], T0 + sec(17), 2000), { state: 'settling', holder: after, leaseUntilUs: T0 + sec(31) })
      assert.equal(resolveClaims(order, [], T0 + sec(18), 2000).state, 'held')
      assert.deepEqual(resolveClaims(order, [], T0 + sec(31)), { state: 'lapsed', lastHolder: after, capped: false })
    }
  })

  it('lets the same executor reclaim after its own lapse', () => {
    const a1 = c('ex-a', T0)
    const a2 = c('ex-a', T0 + sec(20))
    assert.deepEqual(resolveClaims([a2, a1], [], T0 + sec(25)), { state: 'held', holder: a2, leaseUntilUs: T0 + sec(35) })
  })

  it('is lapsed, naming the last holder, when every round ran out', () => {
    const claims = [c('ex-a', T0), c('ex-b', T0 + sec(16)), c('ex-c', T0 + sec(40))]
    assert.deepEqual(resolveClaims(claims, [], T0 + sec(100)), { state: 'lapsed', lastHolder: claims[2], capped: false })
  })

  it('treats a claim exactly at the previous lease end as part of the old round', () => {
    const a = c('ex-a', T0)
    const b = c('ex-b', T0 + sec(15))
    assert.deepEqual(resolveClaims([a, b], [], T0 + sec(16)), { state: 'lapsed', lastHolder: a, capped: false })
  })

  it('uses each claim’s own lease length', () => {
    const a = c('ex-a', T0, 3000)
    assert.equal(resolveClaims([a], [], T0 + sec(3) - 1).state, 'held')
    assert.equal(resolveClaims([a], [], T0 + sec(3)).state, 'lapsed')
  })

  it('keeps a renewed lease and the rounds after it consistent', () => {
    const a = c('ex-a', T0)
    const b = c('ex-b', T0 + sec(20)) // inside a's renewed lease: loses
    const d = c('ex-d', T0 + sec(30)) // after it: wins round 2
    const r = [renewal(a, T0 + sec(12))] // a's lease runs to T0+27 s
    for (const order of permutations([a, b, d])) {
      assert.equal(holderOf(resolveClaims(order, r, T0 + sec(25))), 'ex-a')
      // d is known (its clock runs ahead): the leaf is settling on d, not free
      assert.equal(holderOf(resolveClaims(order, r, T0 + sec(28))), 'ex-d')
      assert.deepEqual(resolveClaims(order.filter((x) => x !== d), r, T0 + sec(28)), { state: 'lapsed', lastHolder: a, capped: false })
      assert.equal(resolveClaims(order, r, T0 + sec(31), 2000).state, 'settling')
      assert.equal(resolveClaims(order, r, T0 + sec(31)).state, 'held')
      assert.deepEqual(resolveClaims(order, r, T0 + sec(33)), { state: 'held', holder: d, leaseUntilUs: T0 + sec(45) })
    }
  })
})

describe('claims before the task is claimable (DESIGN R5)', () => {
  it('a claim dated before the claimable instant does not count, nor do its renewals; one at or after it does', () => {
    const early = c('squatter', T0 + sec(1), 5000)
    const renewals = [3, 7, 11, 15, 19].map((t) => renewal(early, T0 + sec(t)))
    const honest = c('ex-1', T0 + sec(12) + 1)
    const since = { claimableSinceUs: T0 + sec(12) }
    assert.deepEqual(claimRounds([early], renewals, T0 + sec(20), CLAIM_TOLERANCE_MS, since), [])
    assert.deepEqual(resolveClaims([early], renewals, T0 + sec(20), SETTLE_FLOOR_MS, CLAIM_TOLERANCE_MS, since), { state: 'unclaimed' })
    assert.equal(holderOf(resolveClaims([early, honest], renewals, T0 + sec(13), SETTLE_FLOOR_MS, CLAIM_TOLERANCE_MS, since)), 'ex-1')
    // Without the rule the squatter's early claim would hold the leaf all along.
    assert.equal(holderOf(resolveClaims([early, honest], renewals, T0 + sec(13))), 'squatter')
    assert.equal(claimRounds([c('ex-1', T0 + sec(12))], [], T0 + sec(13), CLAIM_TOLERANCE_MS, since).length, 1, 'at the instant itself it counts')
    assert.deepEqual(claimRounds([honest], [], T0 + sec(13), CLAIM_TOLERANCE_MS, { claimableSinceUs: Infinity }), [], 'not claimable yet: nothing counts')
  })

  it('a result inside a round of claims made too early has no authority', () => {
    const early = c('squatter', T0 + sec(1))
    const since = { claimableSinceUs: T0 + sec(12) }
    const rounds = claimRounds([early], [], T0 + sec(20), CLAIM_TOLERANCE_MS, since)
    assert.equal(wonRoundAt(rounds, 'squatter', T0 + sec(5)), false, 'finished before its input existed')
    assert.equal(wonRoundAt(rounds, 'squatter', T0 + sec(14)), false, 'finished later, still inside the early round')
    assert.equal(wonRoundAt(claimRounds([early], [], T0 + sec(20)), 'squatter', T0 + sec(5)), true, 'without dependencies it would count')
  })

  it('an honest claim is stamped just after the claimable instant when that is ahead of its clock, within half the tolerance', () => {
    assert.equal(claimStamp(T0, null), T0)
    assert.equal(claimStamp(T0 + sec(3), T0 + sec(1)), T0 + sec(3))
    assert.equal(claimStamp(T0, T0 + sec(1)), T0 + sec(1) + 1)
    assert.equal(stampWithinTolerance(T0, T0 + ms(CLAIM_TOLERANCE_MS / 2) - 1), true)
    assert.equal(stampWithinTolerance(T0, T0 + ms(CLAIM_TOLERANCE_MS / 2)), false)
    // Such a claim passes the live time rule at a receiver whose clock is up to half the tolerance behind ours.
    const stamped = claimStamp(T0, T0 + sec(2))
    assert.equal(claimWithinTolerance(stamped, T0 - ms(CLAIM_TOLERANCE_MS / 2) + sec(0.5)), true)
  })
})

describe('the hold limit of a round (DESIGN R5)', () => {
  it('renewals extend a lease only up to claimed_at + max hold; then the round ends and a later claim wins the next', () => {
    const squat = c('squatter', T0, 5000)
    const renewals = Array.from({ length: 30 }, (_, i) => renewal(squat, T0 + sec(2 * (i + 1))))
    const hold = { maxHoldMs: 20_000 }
    assert.equal(leaseEnd(squat, renewals, 20_000), T0 + sec(20))
    assert.equal(leaseEnd(squat, renewals), T0 + sec(65), 'the default limit is far beyond this')
    const during = c('ex-1', T0 + sec(19))
    const after = c('ex-2', T0 + sec(20) + 1)
    const rounds = claimRounds([squat, during, after], renewals, T0 + sec(30), CLAIM_TOLERANCE_MS, hold)
    assert.deepEqual(rounds.map((r) => [r.winner.claimer_peer, r.capped]), [['squatter', true], ['ex-2', false]])
    assert.equal(holderOf(resolveClaims([squat, during, after], renewals, T0 + sec(25), SETTLE_FLOOR_MS, CLAIM_TOLERANCE_MS, hold)), 'ex-2')
    assert.deepEqual(resolveClaims([squat], renewals, T0 + sec(21), SETTLE_FLOOR_MS, CLAIM_TOLERANCE_MS, hold), { state: 'lapsed', lastHolder: squat, capped: true })
    assert.equal(resolveClaims([squat], renewals, T0 + sec(19), SETTLE_FLOOR_MS, CLAIM_TOLERANCE_MS, hold).state, 'held')
    // A result after the limit belongs to the next round, whoever won it.
    assert.equal(wonRoundAt(rounds, 'squatter', T0 + sec(22)), false)
  })

  it('a holder whose round hit the limit sits out one more hold period: re-claiming at the limit loses to any other claim, and counts again after it', () => {
    const squat = c('squatter', T0, 5000)
    const renewals = Array.from({ length: 10 }, (_, i) => renewal(squat, T0 + sec(2 * (i + 1))))
    const hold = { maxHoldMs: 20_000 }
    const again = c('squatter', T0 + sec(20) + 1, 5000)
    const honest = c('ex-1', T0 + sec(20) + 200_000)
    const rounds = claimRounds([squat, again, honest], renewals, T0 + sec(30), CLAIM_TOLERANCE_MS, hold)
    assert.deepEqual(rounds.map((r) => r.winner.claimer_peer), ['squatter', 'ex-1'])
    // The same for any order of the messages.
    assert.deepEqual(claimRounds([honest, again, squat], [...renewals].reverse(), T0 + sec(30), CLAIM_TOLERANCE_MS, hold).map((r) => r.winner.claimer_peer), ['squatter', 'ex-1'])
    // Alone, its re-claim does not count; once the period is over, a claim of its own does.
    assert.deepEqual(claimRounds([squat, again], renewals, T0 + sec(30), CLAIM_TOLERANCE_MS, hold).map((r) => r.winner.claimer_peer), ['squatter'])
    const later = c('squatter', T0 + sec(40), 5000)
    assert.deepEqual(claimRounds([squat, again, later], renewals, T0 + sec(50), CLAIM_TOLERANCE_MS, hold).map((r) => r.winner.claimed_at), [squat.claimed_at, later.claimed_at])
  })

  it('a lease that lapses on its own before the limit is not capped', () => {
    const a = c('ex-1', T0, 5000)
    assert.deepEqual(resolveClaims([a], [renewal(a, T0 + sec(2))], T0 + sec(8), SETTLE_FLOOR_MS, CLAIM_TOLERANCE_MS, { maxHoldMs: 20_000 }), { state: 'lapsed', lastHolder: a, capped: false })
  })

  it('the default limit is the default LLM timeout x its attempts + a minute: 540 s', () => {
    assert.equal(DEFAULT_MAX_HOLD_MS, TUNABLES.llmTimeoutMs.default * 4 + 60_000)
    assert.equal(DEFAULT_MAX_HOLD_MS, 540_000)
  })
})
