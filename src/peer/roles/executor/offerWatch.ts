/**
 * What the executor offers, and the watch that keeps it current (DESIGN "Code execution",
 * "Tools"): config.capabilities less can_run_code without a sandbox (codeRun.ts executorOffer,
 * logged once at start), and with MCP tools can_query_api exactly while a tool is usable
 * (tools/offer.ts toolOffer). The tools follow their servers (tools/mcpClients.ts): a lost
 * server's tools go at once, and with the last of them can_query_api, so no leaf needing it is
 * claimed here meanwhile and observers see the gap; it comes back with the first restarted tool
 * (or comes first with the tools of a server whose start was retried).
 * Each change is logged and told to the offer's listeners (the announcer re-announces).
 */
import type { Capability } from '../../../plan/protocol/schemas'
import type { Disposable } from '../../bus'
import type { Logger } from '../../log'
import type { McpToolSet } from '../../tools/mcpClients'
import { toolOffer } from '../../tools/offer'
import { toolEntry } from '../../tools/toolEntry'
import type { ExecutorOffer } from '../codeRun'

/** The capabilities an executor claims and announces now, following its MCP tool set. */
export class OfferWatch implements Disposable {
  private caps: Set<Capability>
  private readonly listeners = new Set<() => void>()
  private watch: Disposable | undefined
  /** Whether can_query_api was offered at some point (its return is "offered again"). */
  private queryOffered: boolean

  /**
   * Logs `capability_not_offered` for can_run_code when `offer` dropped it (and an error when
   * nothing is left to offer).
   * @param offer the sandbox rule's offer (executorOffer)
   * @param toolset the executor's MCP tools; undefined without --mcp-config
   */
  constructor (private readonly offer: ExecutorOffer, private readonly toolset: McpToolSet | undefined, private readonly log: Logger) {
    this.caps = new Set(this.offerNow())
    this.queryOffered = this.caps.has('can_query_api')
    if (offer.dropped !== null) {
      log.warn({ event: 'capability_not_offered', capability: 'can_run_code', reason: offer.reason }, offer.dropped)
      if (this.caps.size === 0) log.error('this executor offers no capability: it will claim no leaf')
    }
  }

  /** The offer with the MCP tools applied: what this executor claims and announces now. */
  private offerNow (): Capability[] {
    return toolOffer(this.offer.capabilities, this.toolset ?? null).capabilities
  }

  /** true while `cap` is offered: the claim loop takes only such tasks. */
  has (cap: Capability): boolean { return this.caps.has(cap) }

  /** What it offers now (ExecutorHandle.capabilities), in offer order. */
  get capabilities (): Capability[] { return [...this.caps] }

  /** Its MCP tools usable now as `server/tool`, in the set's order; empty without tools or while can_query_api is not offered. */
  tools (): string[] {
    return this.caps.has('can_query_api') && this.toolset !== undefined ? this.toolset.tools.map(toolEntry) : []
  }

  /** Calls `listener` after each change of the offer (an MCP server lost or restarted). */
  onOfferChange (listener: () => void): Disposable {
    this.listeners.add(listener)
    return { dispose: () => { this.listeners.delete(listener) } }
  }

  /**
   * Starts following the tool set (no-op without one): on each change the offer is re-read, a
   * can_query_api lost or regained is logged, the listeners are told, then `onChanged` (the
   * claim loop looks again, since what it may claim changed).
   */
  follow (onChanged: () => void): void {
    const toolset = this.toolset
    if (toolset === undefined || this.watch !== undefined) return
    this.watch = toolset.onChange(() => {
      const had = this.caps.has('can_query_api')
      const now = toolOffer(this.offer.capabilities, toolset)
      this.caps = new Set(now.capabilities)
      if (had && !this.caps.has('can_query_api')) {
        this.log.warn({ event: 'capability_not_offered', capability: 'can_query_api', reason: now.dropped, ...now.why }, now.dropped ?? 'can_query_api is not offered')
      } else if (!had && this.caps.has('can_query_api')) {
        const names = toolset.tools.map((t) => t.name)
        // A server whose start was retried can bring the first tool after the executor started.
        this.log.info({ event: 'capability_offered', capability: 'can_query_api', tools: names }, `can_query_api is offered${this.queryOffered ? ' again' : ''} with ${names.length} MCP tool${names.length === 1 ? '' : 's'}: ${names.join(', ')}`)
        this.queryOffered = true
      }
      for (const fn of this.listeners) {
        try { fn() } catch (err) { this.log.error({ err }, 'announcing the executor\'s offer failed') }
      }
      onChanged()
    })
  }

  /** Stops following the tool set and forgets the listeners. */
  dispose (): void {
    this.watch?.dispose()
    this.listeners.clear()
  }
}
