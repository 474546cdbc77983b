/** Adaptive claim settle window (DESIGN R5): floor, growth with claim ages and loop lag, ceiling. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SettleWindow } from '../../src/peer/roles/settleWindow'

/** Resolves once the event loop has run a little (the lag probe fires every 50 ms). */
const ticks = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

describe('SettleWindow', () => {
  it('without samples is the floor, or twice the measured loop lag plus margin when that is more', async () => {
    const w = new SettleWindow({ floorMs: 250, ceilingMs: 2000 })
    try {
      await ticks(120)
      const f = w.figures()
      assert.equal(f.samples, 0)
      assert.equal(f.windowMs, Math.min(2000, Math.max(250, Math.round(2 * f.loopLagMs + 20))))
    } finally { w.dispose() }
  })

  it('grows to twice the p95 age of competitors\' claims plus margin, capped at the ceiling', () => {
    const w = new SettleWindow({ floorMs: 100, ceilingMs: 1000 })
    try {
      const now = performance.now()
      for (let i = 0; i < 20; i++) w.observeAge(200, now)
      const f = w.figures(now)
      assert.equal(f.ageP95Ms, 200)
      assert.ok(f.windowMs >= 420 && f.windowMs <= 1000, JSON.stringify(f))
      for (let i = 0; i < 20; i++) w.observeAge(5000, now)
      assert.equal(w.windowMs(now), 1000)
      // Negative ages (the sender's clock ahead) count as 0.
      const v = new SettleWindow({ floorMs: 100, ceilingMs: 1000 })
      v.observeAge(-3000, now)
      assert.equal(v.figures(now).ageP95Ms, 0)
      v.dispose()
    } finally { w.dispose() }
  })

  it('forgets a burst of slow messages 5 s after it, but keeps each peer\'s latest age until that peer is heard again (30 s at most)', () => {
    const w = new SettleWindow({ floorMs: 100, ceilingMs: 2000 })
    try {
      const t0 = performance.now()
      // Peers just started: their first messages are slow, then the link is quick again.
      for (let i = 0; i < 10; i++) w.observeAge(500, t0)
      w.observeAge(10, t0 + 100, 'peer-a')
      assert.ok(w.windowMs(t0 + 100) >= 1000, 'the burst counts while it is recent')
      const later = w.figures(t0 + 5_001)
      assert.equal(later.samples, 1)
      assert.equal(later.ageP95Ms, 10, 'the burst is forgotten; peer-a\'s latest age is what is left')
      // A competitor behind a slow link keeps the window wide between its heartbeats (10 s apart).
      w.observeAge(300, t0 + 6_000, 'peer-slow')
      assert.equal(w.figures(t0 + 15_000).ageP95Ms, 300)
      assert.ok(w.windowMs(t0 + 15_000) >= 620)
      // Heard again, quick this time: its latest age replaces the slow one.
      w.observeAge(20, t0 + 16_000, 'peer-slow')
      assert.equal(w.figures(t0 + 16_000).ageP95Ms, 20)
      // Nothing heard for 30 s: forgotten.
      assert.deepEqual([w.figures(t0 + 46_001).ageP95Ms, w.figures(t0 + 46_001).peers], [0, 0])
    } finally { w.dispose() }
  })

  it('grows with a blocked event loop (a 300 ms block), within the ceiling', async () => {
    const w = new SettleWindow({ floorMs: 50, ceilingMs: 5000 })
    try {
      await ticks(120)
      const t = Date.now()
      while (Date.now() - t < 300) { /* block the loop */ }
      await ticks(120)
      const f = w.figures()
      assert.ok(f.loopLagMs >= 200, JSON.stringify(f))
      assert.ok(f.windowMs >= 2 * f.loopLagMs, JSON.stringify(f))
    } finally { w.dispose() }
  })

  it('treats a ceiling below the floor as the floor', () => {
    const w = new SettleWindow({ floorMs: 800, ceilingMs: 100 })
    try {
      w.observeAge(10_000)
      assert.equal(w.windowMs(), 800)
    } finally { w.dispose() }
  })
})
