/**
 * Executor role (DESIGN §5, §8): announces its capabilities, claims live leaves it can do with
 * the claim rule (µs claim, settle window, earliest (claimed_at, peer) wins), holds the lease
 * by renewing it while it works, and publishes one result per leaf it executes: success, or a
 * failure after the provider's retries, never a failure shown as done.
 *
 * A leaf held by someone else is watched; when its lease lapses with no result (a crashed
 * executor), any executor still running competes for it again (fixes the seed's B5).
 * Superseded leaves (children of a losing split) are never claimed.
 */
import { resolveClaims } from '../protocol/claims'
import { leafOutcome } from '../state/leafOutcome'
import { contentId } from '../protocol/ids'
import { MAX_INLINE_OUTPUT, stripControlChars, type AnyEnvelope, type Capability, type ClaimMsg, type PromptNode } from '../protocol/schemas'
import { formatTimestamp, parseTimestamp } from '../protocol/time'
import type { Disposable } from '../bus'
import type { LlmProvider } from '../llm/provider'
import { sha256Hex, truncateText } from '../net/blobs'
import type { RoleContext } from './context'
import { brief, failureText, guard, RoleTimers } from './common'
import { ancestorTexts, liveLeafCapability } from './lineage'
import { executePrompt, EXECUTE_SYSTEM } from './prompts'

/** Leaves one executor works on at once: it only claims what it can start right away. */
const PARALLEL_LEAVES = 1
/** Extra wait after the settle window before reading the winner, for claims still in flight (ms). */
const SETTLE_MARGIN_MS = 50
/** Longest pause between two looks at the leaves (lease lapses need no message to happen). */
const MAX_TICK_MS = 1000

export interface ExecutorOptions {
  /**
   * Stores a full output too large to inline (DESIGN §10) and returns its sha256; the result
   * then carries the first MAX_INLINE_OUTPUT chars and the sha256, and peers fetch the rest by
   * it. Provided by the peer runtime (its blob store).
   */
  storeBlob?: (text: string) => Promise<string>
  /** Orders candidate leaves (tests); default spreads executors over different leaves. */
  order?: (nodes: PromptNode[]) => PromptNode[]
}

/**
 * Starts the executor on `ctx`: claims live leaves whose capability is in
 * `ctx.config.capabilities`, one at a time. Announcing the capabilities is startAnnouncer's job
 * (index.ts). @returns a Disposable stopping it (a leaf in progress is abandoned: its lease lapses)
 */
export function startExecutor (ctx: RoleContext, llm: LlmProvider, opts: ExecutorOptions = {}): Disposable {
  const { bus, state, config, log } = ctx
  const me = bus.peerId
  const caps = new Set<Capability>(config.capabilities)
  const timers = new RoleTimers()
  /** Leaves this process is claiming or executing. */
  const working = new Set<string>()
  /** Local monotonic ms when this executor first saw each leaf. */
  const firstSeen = new Map<string, number>()
  /** Leaves already warned about for clock skew (one warning per leaf). */
  const warnedSkew = new Set<string>()
  let scheduled = false
  // Peer-specific order: executors tend to go for different leaves first, so fewer claims collide.
  const order = opts.order ?? ((nodes: PromptNode[]) => nodes
    .map((n) => ({ n, k: contentId(me, n.node_id) }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map((x) => x.n))

  const sub = bus.onMessage((env: AnyEnvelope) => {
    switch (env.kind) {
      case 'node':
        if (!firstSeen.has(env.body.node_id)) firstSeen.set(env.body.node_id, performance.now())
        schedule()
        break
      case 'accepted': case 'claim': case 'renew': case 'result': case 'goal':
        schedule()
    }
  })
  for (const n of state.nodes()) firstSeen.set(n.node_id, performance.now())
  const stopTick = timers.every(Math.min(MAX_TICK_MS, Math.max(100, Math.floor(config.leaseMs / 4))), schedule)

  function schedule (): void {
    if (scheduled || timers.isDisposed) return
    scheduled = true
    setImmediate(() => {
      scheduled = false
      try {
        look()
      } catch (err) {
        log.error({ err }, 'executor look failed')
      }
    })
  }

  /** Claims the next leaf it can do, if it has a free slot. */
  function look (): void {
    if (timers.isDisposed || working.size >= PARALLEL_LEAVES) return
    const candidates: { node: PromptNode, cap: Capability }[] = []
    const nowMs = performance.now()
    let soonest = Infinity
    for (const node of state.nodes()) {
      if (working.has(node.node_id) || hasOutcome(node)) continue
      const cap = liveLeafCapability(state, node)
      if (cap === null || !caps.has(cap)) continue
      // A leaf is claimed only once it has been known for a settle window: by then every
      // executor that saw it at about the same time has subscribed to its claim topic, so
      // competing claims reach each other within the settle window (measured: a claim on a
      // fresh topic can take over a second to arrive otherwise).
      const seen = firstSeen.get(node.node_id) ?? nowMs
      firstSeen.set(node.node_id, seen)
      if (nowMs - seen < config.settleMs) { soonest = Math.min(soonest, seen + config.settleMs - nowMs); continue }
      const lease = resolveClaims(state.claimsFor(node.node_id), state.renewalsFor(node.node_id), ctx.now(), config.settleMs)
      if (lease.state === 'settling' || lease.state === 'held') continue
      if (skewedOut(node)) { soonest = Math.min(soonest, 1000); continue }
      candidates.push({ node, cap })
    }
    if (soonest !== Infinity) timers.after(soonest + 5, schedule)
    if (candidates.length === 0) return
    const byId = new Map(candidates.map((c) => [c.node.node_id, c]))
    for (const node of order(candidates.map((c) => c.node))) {
      if (working.size >= PARALLEL_LEAVES) break
      const c = byId.get(node.node_id)
      if (c !== undefined) claim(c.node, c.cap)
    }
  }

  function claim (node: PromptNode, cap: Capability): void {
    working.add(node.node_id)
    guard(log, `working on leaf ${node.node_id}`, async () => {
      try {
        await claimAndRun(node, cap)
      } finally {
        working.delete(node.node_id)
        schedule()
      }
    })
  }

  async function claimAndRun (node: PromptNode, cap: Capability): Promise<void> {
    const claimedAtUs = ctx.now()
    const mine: ClaimMsg = {
      node_id: node.node_id,
      goal_id: node.goal_id,
      claimer_peer: me,
      claimed_at: formatTimestamp(claimedAtUs),
      capability: cap,
      lease_ms: config.leaseMs
    }
    await bus.publish('claim', mine)
    log.debug({ node_id: node.node_id }, `claimed "${brief(node.text)}"`)
    await timers.sleep(config.settleMs + SETTLE_MARGIN_MS)
    if (timers.isDisposed) return
    if (hasOutcome(node)) return
    const lease = resolveClaims(state.claimsFor(node.node_id), state.renewalsFor(node.node_id), ctx.now(), config.settleMs)
    const holder = lease.state === 'settling' || lease.state === 'held' ? lease.holder : null
    if (holder === null || holder.claimer_peer !== me || parseTimestamp(holder.claimed_at) !== claimedAtUs) {
      log.info({ node_id: node.node_id, holder: holder?.claimer_peer ?? null }, `lost the claim on "${brief(node.text)}"`)
      return
    }
    if (skewedOut(node)) return
    await execute(node, mine)
  }

  /** true when the leaf has a result that counts (DESIGN §5 result authority: a forged one does not stop us). */
  function hasOutcome (node: PromptNode): boolean {
    if (state.resultsFor(node.node_id).length === 0) return false
    return leafOutcome(state, node.node_id, ctx.now(), { settleMs: config.settleMs }).results.length > 0
  }

  /**
   * true when a competitor's live claim on this leaf looked older than the claim tolerance: our
   * clock runs ahead, we dropped its claim and cannot rank claims for this leaf, so we stand down
   * until its lease would have lapsed (DESIGN §5; the competitor keeps the leaf).
   */
  function skewedOut (node: PromptNode): boolean {
    const skew = bus.clockSkewEvidence?.(node.node_id)
    if (skew === undefined) return false
    if (!warnedSkew.has(node.node_id)) {
      warnedSkew.add(node.node_id)
      log.warn({ node_id: node.node_id, peer: skew.peer, offset_ms: Math.round(skew.offsetMs) },
        `local clock looks ${(-skew.offsetMs / 1000).toFixed(1)} s ahead of ${skew.peer}; standing down on "${brief(node.text)}"`)
    }
    return true
  }

  /** The current holder of a leaf's lease when it is not this claim, else null. */
  function otherHolder (node: PromptNode, mine: ClaimMsg): string | null {
    const lease = resolveClaims(state.claimsFor(node.node_id), state.renewalsFor(node.node_id), ctx.now(), config.settleMs)
    if (lease.state !== 'settling' && lease.state !== 'held') return null
    const h = lease.holder
    return h.claimer_peer === me && h.claimed_at === mine.claimed_at ? null : h.claimer_peer
  }

  async function execute (node: PromptNode, mine: ClaimMsg): Promise<void> {
    log.info({ node_id: node.node_id, capability: mine.capability }, `executing "${brief(node.text)}"`)
    const stopRenewing = timers.every(Math.max(100, Math.floor(config.leaseMs / 3)), () => {
      guard(log, `renewing the lease on ${node.node_id}`, async () => {
        await bus.publish('renew', {
          node_id: node.node_id, goal_id: node.goal_id, claimer_peer: me, claimed_at: mine.claimed_at, renewed_at: formatTimestamp(ctx.now())
        })
      })
    })
    const parent = state.goal(node.goal_id)
    const ancestors = parent === undefined ? [] : [...ancestorTexts(state, parent), parent.text]
    const retriesBefore = llm.stats().retries
    let output: string
    let success: boolean
    let attempts: number
    try {
      output = await llm.generateText({ purpose: 'execute', system: EXECUTE_SYSTEM, prompt: executePrompt({ task: node.text, ancestors }) })
      success = true
      // One leaf at a time, so the provider's retry count since the call began is this call's.
      attempts = 1 + Math.max(0, llm.stats().retries - retriesBefore)
    } catch (err) {
      output = failureText(`executing leaf ${node.node_id} failed`, err)
      success = false
      attempts = typeof (err as { attempts?: unknown }).attempts === 'number' ? (err as { attempts: number }).attempts : 1
      log.error({ node_id: node.node_id }, output)
    } finally {
      stopRenewing()
    }
    if (timers.isDisposed) return
    // A competing claim that wins by the rule arrived late, or the lease lapsed and someone
    // else holds it now: that executor publishes the result; a second one would be a duplicate.
    const other = otherHolder(node, mine)
    if (other !== null) {
      log.warn({ node_id: node.node_id, holder: other }, `lost the lease on "${brief(node.text)}" while working; result not published`)
      return
    }
    // A competitor's claim from our past arrived while we worked: it ranks claims with a sane
    // clock and runs the leaf itself, so publishing ours too would make a duplicate.
    if (skewedOut(node)) return
    // The wire refuses control characters in text (DESIGN §1); a model's stray ones are dropped.
    output = stripControlChars(output)
    const bytes = Buffer.byteLength(output, 'utf8')
    let sha: string | null = null
    let inline = output
    if (output.length > MAX_INLINE_OUTPUT) {
      sha = opts.storeBlob !== undefined ? await opts.storeBlob(output) : sha256Hex(output)
      inline = truncateText(output, MAX_INLINE_OUTPUT)
      if (opts.storeBlob === undefined) log.warn({ node_id: node.node_id, bytes }, 'output too large to inline and no blob store: only its first part is published')
    }
    await bus.publish('result', {
      node_id: node.node_id,
      goal_id: node.goal_id,
      executor_peer: me,
      success,
      output: inline,
      output_sha256: sha,
      output_bytes: bytes,
      attempts: Math.min(100, Math.max(1, attempts)),
      finished_at: formatTimestamp(ctx.now())
    })
    log.info({ node_id: node.node_id, success, bytes }, `${success ? 'finished' : 'failed'} "${brief(node.text)}"`)
  }

  schedule()

  return {
    dispose () {
      sub.dispose()
      stopTick()
      timers.dispose()
    }
  }
}
