/**
 * Adaptive claim settle window (DESIGN R5). A claimer may trust that it won once every claim
 * stamped earlier than its own has had time to arrive. That time is the age a competitor's claim
 * has on arrival (delivery latency plus any clock offset between the two peers) plus this peer's
 * event-loop lag (a message already on the socket waits for the loop), measured with a probe timer. So the window follows the
 * measured ages of other peers' claims, renewals and heartbeats and the measured loop lag,
 * clamped to [floorMs, ceilingMs]: small on an idle machine, growing under load.
 *
 * Two memories of ages: the p95 of the last few seconds (a load spike) and each peer's latest
 * age (its link), kept until that peer is heard again. A burst of slow messages (peers just
 * started, compiling) so stops counting seconds after it ends, while a competitor behind a slow
 * link keeps the window wide between its heartbeats.
 */
/** Recent samples older than this are forgotten (ms), so the window shrinks back once a load spike is over. */
const SAMPLE_TTL_MS = 5_000
/** A peer's latest age is forgotten after this long without a new one (ms): three default heartbeats. */
const PEER_TTL_MS = 30_000
/** Most age samples kept. */
const MAX_SAMPLES = 256
/** Headroom over the measured figures (ms): scheduling noise not seen in the samples. */
const MARGIN_MS = 20
/** Period of the loop-lag probe timer (ms); its lateness is the lag. */
const PROBE_MS = 50
/** Loop-lag figures are the worst probe lateness over this many recent probe periods. */
const LAG_PROBES = 40

export interface SettleWindowOptions {
  /** Smallest window, ms (the `--settle-ms` flag). */
  floorMs: number
  /** Largest window, ms (`--settle-max-ms`); a ceiling below the floor counts as the floor. */
  ceilingMs: number
}

/** Snapshot of what the window is made of, for logs and peer status. */
export interface SettleFigures {
  /** Current window, ms. */
  windowMs: number
  /** The age term, ms: the larger of the recent p95 and the peers' largest latest age (0 without samples). */
  ageP95Ms: number
  /** Worst event-loop lag over the last ~2 s, ms. */
  loopLagMs: number
  /** Recent age samples. */
  samples: number
  /** Peers with a latest age remembered. */
  peers: number
}

export class SettleWindow {
  private readonly samples: { atMs: number, ageMs: number }[] = []
  /** Each peer's latest age on arrival, by PeerId. */
  private readonly latest = new Map<string, { atMs: number, ageMs: number }>()
  /** Lateness of the last LAG_PROBES probe timers, ms. */
  private readonly lags: number[] = []
  private readonly timer: NodeJS.Timeout
  private lastProbeMs = performance.now()

  // A timer's lateness is measured directly: perf_hooks' monitorEventLoopDelay missed single
  // long blocks in measurements on Node 20, and one long block is what delays a claim.
  constructor (private readonly opts: SettleWindowOptions) {
    this.timer = setInterval(() => { this.probe() }, PROBE_MS)
    this.timer.unref()
  }

  /** Largest window this estimator gives, ms. */
  get ceilingMs (): number { return Math.max(this.opts.floorMs, this.opts.ceilingMs) }

  /**
   * Records how old another peer's live claim, renewal or heartbeat was when it arrived
   * (receiver clock minus its stamp, ms), and as that peer's latest when `peer` is given.
   * Negative ages (a sender clock ahead of ours) count as 0; ages above the ceiling are capped,
   * since a longer window could not catch such a message anyway.
   */
  observeAge (ageMs: number, nowMs: number = performance.now(), peer?: string): void {
    if (!Number.isFinite(ageMs)) return
    const sample = { atMs: nowMs, ageMs: Math.min(this.ceilingMs, Math.max(0, ageMs)) }
    this.samples.push(sample)
    if (this.samples.length > MAX_SAMPLES) this.samples.shift()
    if (peer !== undefined) this.latest.set(peer, sample)
  }

  /** Worst event-loop lag over the last ~2 s, ms, counting a probe overdue right now. */
  loopLagMs (nowMs: number = performance.now()): number {
    const overdue = Math.max(0, nowMs - this.lastProbeMs - PROBE_MS)
    return Math.max(overdue, ...this.lags)
  }

  /**
   * Current window, ms: clamp(floor, ceiling, 2 x age + 2 x worst loop lag + margin), age being
   * the larger of the recent p95 and the largest of the peers' latest ages.
   */
  windowMs (nowMs: number = performance.now()): number {
    return this.figures(nowMs).windowMs
  }

  figures (nowMs: number = performance.now()): SettleFigures {
    while (this.samples.length > 0 && nowMs - (this.samples[0] as { atMs: number }).atMs > SAMPLE_TTL_MS) this.samples.shift()
    let peerMax = 0
    for (const [peer, s] of this.latest) {
      if (nowMs - s.atMs > PEER_TTL_MS) this.latest.delete(peer)
      else peerMax = Math.max(peerMax, s.ageMs)
    }
    const ages = this.samples.map((s) => s.ageMs).sort((a, b) => a - b)
    const recentP95 = ages.length === 0 ? 0 : ages[Math.min(ages.length - 1, Math.floor(ages.length * 0.95))] as number
    const ageP95Ms = Math.max(recentP95, peerMax)
    const loopLagMs = this.loopLagMs(nowMs)
    const raw = 2 * ageP95Ms + 2 * loopLagMs + MARGIN_MS
    const windowMs = Math.round(Math.min(this.ceilingMs, Math.max(this.opts.floorMs, raw)))
    return { windowMs, ageP95Ms: Math.round(ageP95Ms), loopLagMs: Math.round(loopLagMs), samples: ages.length, peers: this.latest.size }
  }

  dispose (): void {
    clearInterval(this.timer)
  }

  private probe (): void {
    const now = performance.now()
    this.lags.push(Math.max(0, now - this.lastProbeMs - PROBE_MS))
    if (this.lags.length > LAG_PROBES) this.lags.shift()
    this.lastProbeMs = now
  }
}
