/**
 * Whether this peer has caught up with the swarm since its process started (DESIGN "Front
 * doors"). A fresh process holds its data dir's old picture of the plans, or nothing: before a
 * state sync brings the rest, a plan that finished elsewhere reads running with no spend, and a
 * plan it never held is missing. The MCP front door's tools and the observer's tree header read
 * this instead of answering from that picture.
 *
 * Synced once a sync session with a peer has completed (roles/syncGate.ts whenFirstSynced, the
 * rule an executor claims by), or once no peer at all was connected for the grace period
 * (`--sync-grace-ms`: nobody is there to sync with), or at once for a peer given no way to
 * find one (no --bootstrap, no --anchor, mDNS off).
 */
import type { Disposable } from './bus'
import type { PeerConfig } from './config'
import type { PeerSyncView } from './roles/context'
import { whenFirstSynced, type FirstSync } from './roles/syncGate'

/** How the peer came to count as synced: a completed session, no peer connected for the grace period, or no way to reach one. */
export type SyncedHow = FirstSync | { synced: false, isolated: true }

/** Whether `config` gives the peer no way to find another one: no --bootstrap, no --anchor, mDNS off. */
export function isolatedConfig (config: Pick<PeerConfig, 'bootstrap' | 'anchors' | 'mdns'>): boolean {
  return config.bootstrap.length === 0 && (config.anchors ?? []).length === 0 && !config.mdns
}

/** Tracks the first sync of this process (see the module doc). */
export class FirstSyncWatch implements Disposable {
  private reached: SyncedHow | null = null
  private readonly listeners = new Set<() => void>()
  private readonly wait: Disposable | null = null

  /**
   * @param sync the runtime's sync view; undefined (a bus without sync, e.g. in-process) counts as synced
   * @param graceMs how long no peer may be connected before the peer counts as synced without a sync (ms)
   * @param isolated the peer has no way to find another one (isolatedConfig): synced at once
   */
  constructor (sync: PeerSyncView | undefined, graceMs: number, isolated: boolean) {
    if (sync === undefined) { this.reached = { synced: true, peer: null }; return }
    if (isolated && sync.syncedPeers() === 0) { this.reached = { synced: false, isolated: true }; return }
    this.wait = whenFirstSynced(sync, graceMs, (r) => { this.reach(r) })
  }

  /** Whether the peer has synced (or has nobody to sync with). */
  get synced (): boolean { return this.reached !== null }

  /** How it came to be synced; null while it is not. */
  get how (): SyncedHow | null { return this.reached }

  /**
   * Resolves true once synced (at once when it is), false after `timeoutMs` (ms) or when
   * `signal` aborts first.
   */
  async until (timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return true
    if (timeoutMs <= 0 || signal?.aborted === true) return false
    return await new Promise<boolean>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.listeners.delete(done)
        signal?.removeEventListener('abort', done)
        resolve(this.synced)
      }
      const timer = setTimeout(done, timeoutMs)
      this.listeners.add(done)
      signal?.addEventListener('abort', done)
    })
  }

  /** Calls `listener` once, when the peer becomes synced (never when it already is). */
  onSynced (listener: () => void): Disposable {
    const once = (): void => { this.listeners.delete(once); listener() }
    if (!this.synced) this.listeners.add(once)
    return { dispose: () => { this.listeners.delete(once) } }
  }

  private reach (r: SyncedHow): void {
    if (this.reached !== null) return
    this.reached = r
    for (const l of [...this.listeners]) l()
  }

  dispose (): void {
    this.wait?.dispose()
    this.listeners.clear()
  }
}
