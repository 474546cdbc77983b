/**
 * Persistent Ed25519 identity of a peer: `<identityDir>/<name>.key`, the libp2p protobuf
 * encoding of the private key, mode 0600. A restart with the same name keeps its PeerId; a
 * corrupt file is an error naming the file, never a silent new identity.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises'
import { ensureDir } from './dataDir'
import path from 'node:path'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'

/** The key file exists but cannot be used. `file` is its path. */
export class IdentityError extends Error {
  override name = 'IdentityError'
  constructor (message: string, readonly file: string) { super(message) }
}

/** Path of the key file of identity `name`. */
export function identityFile (identityDir: string, name: string): string {
  return path.join(identityDir, `${name}.key`)
}

/**
 * Loads identity `name`, creating a new Ed25519 key (dir 0700, file 0600) when none exists.
 * @returns the private key and whether it was created now
 * @throws IdentityError when the file exists but is unreadable, corrupt or not Ed25519
 */
export async function loadOrCreateIdentity (identityDir: string, name: string): Promise<{ key: PrivateKey, created: boolean, file: string }> {
  const file = identityFile(identityDir, name)
  let bytes: Buffer | null = null
  try {
    bytes = await readFile(file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new IdentityError(`cannot read identity key file ${file}: ${(err as Error).message}`, file)
  }
  if (bytes !== null) {
    let key: PrivateKey
    try {
      key = privateKeyFromProtobuf(bytes)
    } catch (err) {
      throw new IdentityError(`identity key file ${file} is corrupt (not a libp2p private key: ${(err as Error).message}); move it away to create a new identity`, file)
    }
    if (key.type !== 'Ed25519') throw new IdentityError(`identity key file ${file} holds a ${key.type} key; Goal Swarm needs Ed25519`, file)
    return { key, created: false, file }
  }
  ensureDir(identityDir)
  const key = await generateKeyPair('Ed25519')
  try {
    // 'wx': never overwrite a key another process created a moment ago.
    await writeFile(file, privateKeyToProtobuf(key), { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return await loadOrCreateIdentity(identityDir, name)
    throw new IdentityError(`cannot write identity key file ${file}: ${(err as Error).message}`, file)
  }
  await chmod(file, 0o600) // the umask may have masked the mode given to writeFile
  return { key, created: true, file }
}
