/**
 * libp2p private-network swarm keys (the go-ipfs "swarm.key" v1 format):
 *   /key/swarm/psk/1.0.0/
 *   /base16/
 *   <64 hex chars>
 * Peers configured with a key only complete connections with peers holding the same key.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'

const HEADER = '/key/swarm/psk/1.0.0/'

/** A swarm key file that is missing, unreadable or not in the v1 format. `file` names it. */
export class SwarmKeyError extends Error {
  override name = 'SwarmKeyError'
  constructor (message: string, readonly file: string) { super(message) }
}

/**
 * Reads and checks a swarm key file.
 * @returns the file's bytes, as @libp2p/pnet's preSharedKey({ psk }) wants them
 * @throws SwarmKeyError naming the file
 */
export function readSwarmKey (file: string): Uint8Array {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new SwarmKeyError(`cannot read swarm key file ${file}: ${(err as Error).message}`, file)
  }
  const lines = text.split(/\r?\n/)
  if (lines[0] !== HEADER || lines[1] !== '/base16/' || !/^[0-9a-fA-F]{64}$/.test(lines[2] ?? '')) {
    throw new SwarmKeyError(`swarm key file ${file} is not a v1 key (expected "${HEADER}", "/base16/", then 64 hex chars)`, file)
  }
  return new TextEncoder().encode(`${HEADER}\n/base16/\n${(lines[2] as string).toLowerCase()}`)
}

/** Writes a new random swarm key (mode 0600). Fails if the file exists, so no key is overwritten. */
export function writeNewSwarmKey (file: string): void {
  writeFileSync(file, `${HEADER}\n/base16/\n${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' })
}
