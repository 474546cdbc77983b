/**
 * No claim before a first sync (DESIGN §5): an executor that restarts, or starts cut off, may
 * hold a stale plan state in which finished leaves look open. It claims nothing until one
 * anti-entropy sync with a peer has completed since it started, or until it has been provably
 * alone (no peer connected at all) for the grace period, which it logs as such.
 */
import type { Logger } from 'pino'
import type { Disposable } from '../bus'
import type { PeerSyncView } from './context'

/** How often connectivity is looked at while waiting (ms). */
const POLL_MS = 200

export class SyncGate implements Disposable {
  private isOpen: boolean
  private readonly sub: Disposable | null = null
  private readonly timer: NodeJS.Timeout | null = null
  private aloneSinceMs: number | null = null

  /**
   * @param sync the runtime's sync view; undefined (a bus without sync, e.g. in-process) = open
   * @param graceMs how long being alone must last before claiming without a sync (ms)
   * @param describe text for the log lines (e.g. how many leaves are open); `closed` while waiting
   * @param onOpen called once when the gate opens
   */
  constructor (sync: PeerSyncView | undefined, private readonly graceMs: number, private readonly log: Logger, private readonly describe: (closed: boolean) => string, private readonly onOpen: () => void) {
    this.isOpen = sync === undefined || sync.syncedPeers() > 0
    if (this.isOpen || sync === undefined) return
    log.info({ grace_ms: graceMs }, `claiming nothing until a sync with a peer completes (or ${(graceMs / 1000).toFixed(1)} s with no peer connected; ${describe(true)})`)
    this.sub = sync.onSynced((peer) => { this.openNow(`synced with ${peer}`, { synced_with: peer }) })
    this.timer = setInterval(() => {
      const now = performance.now()
      if (sync.connectedPeers() > 0) { this.aloneSinceMs = null; return }
      this.aloneSinceMs ??= now
      if (now - this.aloneSinceMs >= this.graceMs) {
        this.openNow(`alone: no peer connected for ${(this.graceMs / 1000).toFixed(1)} s, claiming without a sync`, { alone_ms: Math.round(now - this.aloneSinceMs) }, 'warn')
      }
    }, Math.min(POLL_MS, Math.max(10, graceMs)))
    this.timer.unref()
  }

  get open (): boolean { return this.isOpen }

  private openNow (why: string, fields: Record<string, unknown>, level: 'info' | 'warn' = 'info'): void {
    if (this.isOpen) return
    this.isOpen = true
    this.dispose()
    this.log[level](fields, `claims open: ${why} (${this.describe(false)})`)
    this.onOpen()
  }

  dispose (): void {
    this.sub?.dispose()
    if (this.timer !== null) clearInterval(this.timer)
  }
}
