/**
 * Two live processes with one PeerId (a key file copied to a second data dir or machine,
 * DESIGN R5): both would claim under one name, so the rule "earliest claim wins" could not
 * tell them apart. Each announcement carries its process's boot nonce and start time; the newer
 * process (later booted_at, tie: greater nonce) logs an error naming the key file and stops
 * claiming, the older one warns and goes on. The executor asks `stopped` before every claim.
 */
import { identityFile } from '../net/storage/identity'
import type { CapabilityAnnounce } from '../../plan/protocol/schemas'
import { parseTimestamp } from '../../plan/protocol/time'
import type { RoleContext } from './context'

/** Watches this peer's own announcements for a second live process with its identity. */
export class IdentityTwins {
  /** boot_nonce of the older live process, once this one knows it is the newer. */
  private olderTwin: string | null = null
  private warnedNewer = false

  constructor (private readonly ctx: Pick<RoleContext, 'boot' | 'config' | 'log' | 'now'>, private readonly me: string) {}

  /** true once this process knows it is the newer of two live processes with its identity: it claims nothing more. */
  get stopped (): boolean { return this.olderTwin !== null }

  /**
   * Reads an announcement signed with this peer's id (its own, or a twin's).
   * @returns true when it has just learned that it is the newer twin (the caller aborts its calls)
   */
  observe (a: CapabilityAnnounce): boolean {
    const { boot, config, log } = this.ctx
    if (boot === undefined || a.boot_nonce === undefined || a.booted_at === undefined || a.boot_nonce === boot.nonce) return false
    const theirs = parseTimestamp(a.booted_at)
    // Not capability liveness (rules/liveness.ts): the question is whether the other process
    // runs now, and a restart of this identity must not take its own dead predecessor for a twin
    // for a whole capability TTL; both processes share this peer's heartbeat, plus clock tolerance.
    const live = Math.abs(this.ctx.now() - parseTimestamp(a.announced_at)) <= 3 * config.announceIntervalMs * 1000 + 5_000_000
    if (!live) return false
    const iAmNewer = boot.bootedAtUs > theirs || (boot.bootedAtUs === theirs && boot.nonce > a.boot_nonce)
    const file = identityFile(config.identityDir, config.name)
    if (iAmNewer) {
      if (this.olderTwin !== null) return false
      this.olderTwin = a.boot_nonce
      log.error({ event: 'duplicate_identity', this_process: 'newer', stops_claiming: true, peer_id: this.me, key_file: file, other_boot_nonce: a.boot_nonce, other_booted_at: a.booted_at },
        `another live process uses this identity (PeerId ${this.me}, key file ${file}), started before this one: this process stops claiming leaves. Give each peer its own key file.`)
      return true
    }
    if (!this.warnedNewer) {
      this.warnedNewer = true
      log.warn({ event: 'duplicate_identity', this_process: 'older', stops_claiming: false, peer_id: this.me, key_file: file, other_boot_nonce: a.boot_nonce }, `a newer process uses this identity (key file ${file}); it stops claiming, this one goes on`)
    }
    return false
  }
}
