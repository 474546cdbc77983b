/**
 * No claim before a first sync (DESIGN R5): an executor that restarts, or starts cut off, may
 * hold a stale plan state in which finished leaves look open. It claims nothing until one
 * anti-entropy sync with a peer has completed since it started, or until it has been provably
 * alone (no peer connected at all) for the grace period, which it logs as such. The same wait
 * (whenFirstSynced) tells --cancel-goal when a goal it does not hold is unknown to the swarm.
 */
import type { Logger } from 'pino'
import type { Disposable } from '../bus'
import type { PeerSyncView } from './context'

/** "1 leaf", "3 leaves". */
function leafCount (n: number): string {
  return `${n} ${n === 1 ? 'leaf' : 'leaves'}`
}

/** How often connectivity is looked at while waiting (ms). */
const POLL_MS = 200

/** How a wait for a first sync ended: a session completed (with `peer`, null when one had already), or nobody was connected for `aloneMs`. */
export type FirstSync = { synced: true, peer: string | null } | { synced: false, aloneMs: number }

/**
 * Calls `onDone` once: when a sync session with a peer has completed since the process started
 * (synchronously when one already has), or when no peer at all has been connected for `graceMs`
 * (nobody to sync with). @returns a Disposable that stops the wait
 */
export function whenFirstSynced (sync: PeerSyncView, graceMs: number, onDone: (r: FirstSync) => void): Disposable {
  let done = false
  let sub: Disposable | null = null
  let timer: NodeJS.Timeout | null = null
  const stop = (): void => {
    done = true
    sub?.dispose()
    if (timer !== null) clearInterval(timer)
  }
  const finish = (r: FirstSync): void => {
    if (done) return
    stop()
    onDone(r)
  }
  if (sync.syncedPeers() > 0) {
    finish({ synced: true, peer: null })
    return { dispose: stop }
  }
  sub = sync.onSynced((peer) => { finish({ synced: true, peer }) })
  let aloneSinceMs: number | null = null
  timer = setInterval(() => {
    const now = performance.now()
    if (sync.connectedPeers() > 0) { aloneSinceMs = null; return }
    aloneSinceMs ??= now
    if (now - aloneSinceMs >= graceMs) finish({ synced: false, aloneMs: Math.round(now - aloneSinceMs) })
  }, Math.min(POLL_MS, Math.max(10, graceMs)))
  timer.unref()
  return { dispose: stop }
}

export class SyncGate implements Disposable {
  private isOpen: boolean
  private readonly wait: Disposable | null = null

  /**
   * Logs `claims_held` {grace_ms, leaves} when it starts closed, and `claims_open` {how: synced
   * (synced_with) | alone (alone_ms, a warning), leaves} when it opens.
   * @param sync the runtime's sync view; undefined (a bus without sync, e.g. in-process) = open
   * @param graceMs how long being alone must last before claiming without a sync (ms)
   * @param leaves for the log lines: while closed (`closed` true) the leaves the executor could
   *   run without a result in its local state, once open the leaves open for it
   * @param onOpen called once when the gate opens
   */
  constructor (sync: PeerSyncView | undefined, private readonly graceMs: number, private readonly log: Logger, private readonly leaves: (closed: boolean) => number, private readonly onOpen: () => void) {
    this.isOpen = sync === undefined || sync.syncedPeers() > 0
    if (this.isOpen || sync === undefined) return
    const n = leaves(true)
    log.info({ event: 'claims_held', grace_ms: graceMs, leaves: n }, `claiming nothing until a sync with a peer completes (or ${(graceMs / 1000).toFixed(1)} s with no peer connected; ${leafCount(n)} it could run without a result in the local state)`)
    this.wait = whenFirstSynced(sync, graceMs, (r) => {
      if (r.synced) this.openNow(`synced with ${r.peer ?? 'a peer'}`, { how: 'synced', synced_with: r.peer })
      else this.openNow(`alone: no peer connected for ${(this.graceMs / 1000).toFixed(1)} s, claiming without a sync`, { how: 'alone', alone_ms: r.aloneMs, grace_ms: this.graceMs }, 'warn')
    })
  }

  get open (): boolean { return this.isOpen }

  private openNow (why: string, fields: Record<string, unknown>, level: 'info' | 'warn' = 'info'): void {
    if (this.isOpen) return
    this.isOpen = true
    this.dispose()
    const n = this.leaves(false)
    this.log[level]({ event: 'claims_open', ...fields, leaves: n }, `claims open: ${why} (${leafCount(n)} open for this executor)`)
    this.onOpen()
  }

  dispose (): void {
    this.wait?.dispose()
  }
}
