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
    return { code: 1, message: `cannot listen on ${config.host}:${config.port}: the port is in use by another program; give another --port, or --port 0 for any free port` }
  }
  if (hasCode(e, 'EADDRNOTAVAIL')) {
    return { code: 2, message: `cannot listen on ${config.host}: the address is not on this machine (--host); give one of its addresses, 127.0.0.1 for this machine only, or 0.0.0.0 for every network` }
  }
  return { code: 1, message: `cannot start the peer: ${e.message.split('\n')[0] ?? e.message}` }
}
