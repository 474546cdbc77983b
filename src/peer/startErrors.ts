/**
 * The sentence a user reads when a peer cannot start its network side (net/runtime.ts
 * startRuntime), naming the flag to change, and the exit status: 2 for a flag value this
 * machine cannot honour (an address it does not have), 1 for a conflict with something else
 * running (port, data dir, identity in use) or a broken file.
 */
import type { PeerConfig } from './config'
import { DataDirLockedError } from './net/storage/dataDir'
import { IdentityError } from './net/storage/identity'
import { SwarmKeyError } from './net/transport/swarmKey'
import { shownText } from '../plan/protocol/text'

/** The line a peer that cannot start prints on stderr before it exits, for `message` (escaped by shownText: it may quote a path or flag value). */
export function errorLine (message: string): string {
  return `goal-swarm-peer: error: ${shownText(message)}\n`
}

/** Why a peer cannot listen on `host:port`: another program has the port. */
export function portInUseLine (host: string, port: number): string {
  return `cannot listen on ${host}:${port}: the port is in use by another program; give another --port, or --port 0 for any free port`
}

/** Why a peer cannot listen on `host`: the address is not this machine's. */
export function addressNotHereLine (host: string): string {
  return `cannot listen on ${host}: the address is not on this machine (--host); give one of its addresses, 127.0.0.1 for this machine only, or 0.0.0.0 for every network`
}

/** Why a peer cannot serve its dashboard on `host:port`: another program has the port. */
export function dashboardInUseLine (host: string, port: number): string {
  return `cannot serve the dashboard on ${host}:${port}: address in use (--dashboard-port)`
}

/** libp2p's listen errors carry the socket's error code only in their message text. */
function hasCode (err: NodeJS.ErrnoException, code: string): boolean {
  return err.code === code || new RegExp(`\\b${code}\\b`).test(err.message)
}

/**
 * Why the start failed, in one line without a stack, and the exit status.
 * @param err what startRuntime threw
 */
export function startFailure (err: unknown, config: Pick<PeerConfig, 'host' | 'port'>): { code: number, message: string } {
  if (err instanceof IdentityError || err instanceof SwarmKeyError || err instanceof DataDirLockedError) return { code: 1, message: err.message }
  const e = err as NodeJS.ErrnoException
  if (hasCode(e, 'EADDRINUSE')) {
    return { code: 1, message: portInUseLine(config.host, config.port) }
  }
  if (hasCode(e, 'EADDRNOTAVAIL')) {
    return { code: 2, message: addressNotHereLine(config.host) }
  }
  return { code: 1, message: `cannot start the peer: ${e.message.split('\n')[0] ?? e.message}` }
}
