/**
 * Where peers keep their state: under the extension's global storage, never in the home
 * folder or the workspace. Identities are per workspace so two windows never run the same
 * PeerId (and never append to the same state log).
 */
import { createHash } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import * as path from 'node:path'

export interface PeerPaths {
  /** `<storage>/identities`: `<name>.key` files (the runtime writes them 0600). */
  identityDir: string
  /** `<storage>/peers/<name>`: the state log and any other per-peer data. */
  dataDir(name: string): string
  /** `<storage>/identities/<name>.port`: the listen port this identity keeps (stablePort.ts). */
  portFile(name: string): string
  /** `<storage>/prices/<name>.json`: goalSwarm.cost.modelPrices as the peer's --model-prices file. */
  pricesFile(name: string): string
}

/** 8 hex chars naming this workspace (or "no folder"), part of every identity name. */
export function workspaceKey (workspaceId: string | undefined): string {
  return createHash('sha256').update(workspaceId ?? 'no-workspace').digest('hex').slice(0, 8)
}

export function peerPaths (storageDir: string): PeerPaths {
  return {
    identityDir: path.join(storageDir, 'identities'),
    dataDir: (name) => path.join(storageDir, 'peers', name),
    portFile: (name) => path.join(storageDir, 'identities', `${name}.port`),
    pricesFile: (name) => path.join(storageDir, 'prices', `${name}.json`)
  }
}

/** Creates the identity dir and one data dir (mode 0700: keys and plans are private). */
export async function ensurePeerDirs (paths: PeerPaths, name: string): Promise<void> {
  await mkdir(paths.identityDir, { recursive: true, mode: 0o700 })
  await mkdir(paths.dataDir(name), { recursive: true, mode: 0o700 })
}
