/**
 * Parsers of the peer CLI's flag values (cli.ts), one per kind of value: each returns the
 * value or throws commander's InvalidArgumentError with a sentence saying what was expected,
 * which commander prints after the flag's name.
 */
import { accessSync, closeSync, constants as fsConstants, openSync, readSync, statSync, type Stats } from 'node:fs'
import { isIP } from 'node:net'
import path from 'node:path'
import { InvalidArgumentError } from 'commander'
import { multiaddr } from '@multiformats/multiaddr'
import { peerIdFromString } from '@libp2p/peer-id'
import { SWARM_NAME_RE, TEXT_MAX_CHARS } from '../plan/protocol/limits'
import { textLength } from '../plan/protocol/text'
import { CAPABILITIES, CONTROL_CHARS, PEER_NAME_MAX, PeerName, STEER_NOTE_MAX, type Capability } from '../plan/protocol/schemas'
import { checkSwarmName } from '../plan/protocol/topics'
import { tracesUrl } from './trace/endpoint'
import { readSwarmKey } from './net/transport/swarmKey'
import { MODEL_PRICES_SHAPE, modelPricesProblem, ModelPricesSchema, PRICES_MAX_ENTRIES, type ModelPrices } from '../plan/read/pricing'

/** Identity names follow the swarm-name rule: both become file or topic names. */
const NAME_RE = SWARM_NAME_RE

/** A comma-separated capability list, de-duplicated (`--capabilities`). */
export function capabilities (v: string): Capability[] {
  const parts = v.split(',').map((s) => s.trim()).filter((s) => s !== '')
  for (const p of parts) {
    if (!(CAPABILITIES as readonly string[]).includes(p)) throw new InvalidArgumentError(`unknown capability "${p}"; expected a comma-separated list of ${CAPABILITIES.join(', ')}.`)
  }
  return [...new Set(parts)] as Capability[]
}

/** One more TCP multiaddr (`--bootstrap`, repeatable), its /p2p part a PeerId when present. */
export function addr (v: string, prev: string[] | undefined): string[] {
  let ma
  try { ma = multiaddr(v) } catch (err) { throw new InvalidArgumentError(`not a multiaddr (${(err as Error).message}).`) }
  if (!ma.getComponents().some((c) => c.name === 'tcp')) throw new InvalidArgumentError('expected a TCP multiaddr such as /ip4/127.0.0.1/tcp/4001/p2p/<PeerId>.')
  const p2p = ma.getComponents().find((c) => c.name === 'p2p')?.value
  if (p2p !== undefined) {
    try { peerIdFromString(p2p) } catch (err) { throw new InvalidArgumentError(`its /p2p part is not a PeerId (${(err as Error).message}).`) }
  }
  return [...(prev ?? []), v]
}

/**
 * One more anchor (`--anchor`, repeatable; the editor's goalSwarm.anchors entries too): a TCP
 * multiaddr (addr) that names its PeerId, which relayed addresses through it need.
 */
/** --anchor addresses one peer takes: each costs a relay slot and a dial loop, and IPC status lists each (ipc/protocol.ts). */
export const MAX_ANCHORS = 64

export function anchor (v: string, prev: string[] | undefined): string[] {
  const list = addr(v, prev)
  if (list.length > MAX_ANCHORS) throw new InvalidArgumentError(`at most ${MAX_ANCHORS} anchors: a few on reachable addresses are enough for a swarm.`)
  const parts = multiaddr(v).getComponents()
  // A relayed address is a member's, reached through an anchor: it holds no relay server itself.
  if (parts.some((c) => c.name === 'p2p-circuit')) throw new InvalidArgumentError('is a relayed address (it contains /p2p-circuit), a member reached through an anchor: give the anchor\'s own address, the address line it prints at start.')
  if (!parts.some((c) => c.name === 'p2p')) throw new InvalidArgumentError('needs /p2p/<PeerId> at the end (members reach each other through the anchor as <anchor>/p2p-circuit/p2p/<member>): copy the address line the anchor prints at start.')
  return list
}

/** An IPv4 or IPv6 address to listen on. */
export function host (v: string): string {
  if (isIP(v) === 0) throw new InvalidArgumentError('expected an IPv4 or IPv6 address such as 127.0.0.1 or 0.0.0.0.')
  return v
}

/** An identity name (the swarm-name rule: it becomes a file name). */
export function name (v: string): string {
  if (!NAME_RE.test(v)) throw new InvalidArgumentError(`expected 1-64 characters of ${NAME_RE.source.slice(1, -7)}.`)
  // The name is a file and folder name (<name>.key, .goal-swarm/<name>): "." or ".." would put
  // the data folder at .goal-swarm itself or the working folder.
  if (/^\.+$/.test(v)) throw new InvalidArgumentError('a name of dots only would name a folder above the data folder; use letters or digits too.')
  return v
}

/** The human name shown for a peer (the wire's peer-name rule). */
export function displayName (v: string): string {
  const r = PeerName.safeParse(v)
  if (!r.success) throw new InvalidArgumentError(`expected 1-${PEER_NAME_MAX} characters without control characters.`)
  return v
}

/** A swarm name (topics.ts checkSwarmName). */
export function swarm (v: string): string {
  try { return checkSwarmName(v) } catch (err) { throw new InvalidArgumentError(`${(err as Error).message}.`) }
}

/** A readable swarm key file (net/transport/swarmKey.ts). */
export function swarmKey (v: string): string {
  try { readSwarmKey(v) } catch (err) { throw new InvalidArgumentError(`${(err as Error).message}.`) }
  return v
}

/** An absolute URL, normalised. */
export function url (v: string): string {
  let u: URL
  try { u = new URL(v) } catch { throw new InvalidArgumentError('expected an absolute URL such as http://127.0.0.1:11434/v1.') }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InvalidArgumentError(`expected an http:// or https:// URL (an LLM server speaks HTTP), not ${u.protocol}//.`)
  return u.toString()
}

/** An OTLP collector URL (--otlp-endpoint): the URL traces are POSTed to (trace/endpoint.ts tracesUrl). @throws EndpointError saying what is wrong, never quoting the value (it may hold a password) */
export function otlpEndpoint (v: string): string {
  return tracesUrl(v)
}

/** Goal text by the Goal message's text rule (non-blank, TEXT_MAX_CHARS code points, no control characters). */
export function goalText (v: string): string {
  if (v.trim() === '') throw new InvalidArgumentError(`the goal is ${v === '' ? 'empty' : 'blank (only spaces)'}; expected 1-${TEXT_MAX_CHARS} characters of goal text.`)
  if (textLength(v) > TEXT_MAX_CHARS) throw new InvalidArgumentError(`expected 1-${TEXT_MAX_CHARS} characters of goal text (this one has ${textLength(v)}).`)
  if (CONTROL_CHARS.test(v)) throw new InvalidArgumentError('control characters are not allowed in goal text (tab, newline and carriage return are).')
  return v
}

/** A goal id: 16 lowercase hex characters. */
export function goalId (v: string): string {
  if (!/^[0-9a-f]{16}$/.test(v)) throw new InvalidArgumentError('expected a goal id: 16 lowercase hex characters.')
  return v
}

/** Any value but a blank one. */
export function nonEmpty (v: string): string {
  if (v.trim() === '') throw new InvalidArgumentError('expected a non-empty value.')
  return v
}

/**
 * A folder path (`--identity-dir`, `--data-dir`): missing folders are created at start, but
 * neither the path nor any folder above it may be a file, which would only fail later with a
 * bare ENOTDIR on a lock file.
 */
export function folder (v: string): string {
  nonEmpty(v)
  const dir = path.resolve(v)
  for (let p = dir; ; p = path.dirname(p)) {
    const st = statOrNull(p)
    if (st !== null && !st.isDirectory()) {
      throw new InvalidArgumentError(p === dir ? `${dir} is a file; it must be a folder (it is created when missing).` : `${p} is a file, so the folder ${dir} cannot be created there; it must be a folder.`)
    }
    if (st !== null) {
      // The peer reads, writes and creates files in the folder (or creates it in `p`): a folder
      // this user may not use is refused here, naming the flag, instead of a raw EACCES later.
      const problem = accessProblem(p, p === dir ? fsConstants.R_OK | fsConstants.W_OK | fsConstants.X_OK : fsConstants.W_OK | fsConstants.X_OK)
      if (problem !== null) {
        throw new InvalidArgumentError(p === dir ? `this user cannot read and write the folder ${dir} (${problem}); give a folder it may write to.` : `this user cannot create ${dir}: ${p} is not writable (${problem}); give a folder it may write to.`)
      }
      return v
    }
    if (path.dirname(p) === p) return v
  }
}

/** The error code when this process may not access `p` with `mode` (fs.constants), else null. */
function accessProblem (p: string, mode: number): string | null {
  try { accessSync(p, mode); return null } catch (err) { return (err as NodeJS.ErrnoException).code ?? 'no access' }
}

/**
 * The most bytes a --model-prices file may hold: PRICES_MAX_ENTRIES entries with the longest
 * model names take about a fifth of it. Read with this bound, so a huge file or a device such as
 * /dev/zero is refused at once instead of filling memory (a pipe, e.g. `<(jq ...)`, still works).
 */
export const PRICES_FILE_MAX_BYTES = 1024 * 1024

/**
 * The text of `file` (UTF-8) when it holds at most `maxBytes` bytes, else null; reads no more
 * than `maxBytes` + 1 bytes, whatever the file is (regular file, pipe, device).
 * @throws the fs error of opening or reading it (ENOENT, EACCES, EISDIR, ...)
 */
function readAtMost (file: string, maxBytes: number): string | null {
  const fd = openSync(file, 'r')
  try {
    const buf = Buffer.alloc(maxBytes + 1)
    let n = 0
    for (;;) {
      const got = readSync(fd, buf, n, buf.length - n, null)
      if (got === 0) break
      n += got
      if (n > maxBytes) return null
    }
    return buf.subarray(0, n).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

/**
 * A price table file (--model-prices, DESIGN R13 "Money"): JSON of read/pricing.ts
 * MODEL_PRICES_SHAPE, read and checked at start, so a typo is a usage error rather than money
 * shown wrong for a whole plan. @throws InvalidArgumentError naming the file and, for a bad
 * entry, the model and field
 */
export function modelPricesFile (v: string): ModelPrices {
  nonEmpty(v)
  const file = path.resolve(v)
  let text: string | null
  try { text = readAtMost(file, PRICES_FILE_MAX_BYTES) } catch (err) {
    throw new InvalidArgumentError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give a JSON file of ${MODEL_PRICES_SHAPE}.`)
  }
  if (text === null) throw new InvalidArgumentError(`${file} is larger than ${PRICES_FILE_MAX_BYTES / 1024} KiB, far more than a table of ${PRICES_MAX_ENTRIES} models takes; give a JSON file of ${MODEL_PRICES_SHAPE}.`)
  let value: unknown
  try { value = JSON.parse(text) } catch (err) {
    throw new InvalidArgumentError(`${file} is not JSON (${(err as Error).message}); expected ${MODEL_PRICES_SHAPE}.`)
  }
  const problem = modelPricesProblem(value)
  if (problem !== null) throw new InvalidArgumentError(`${file}: ${problem}; expected ${MODEL_PRICES_SHAPE}.`)
  return ModelPricesSchema.parse(value)
}

/**
 * A report path the peer can write: not a directory, in a folder that exists, so a typo is
 * refused at start instead of failing every write of a long plan (or creating folders).
 */
export function reportPath (v: string): string {
  nonEmpty(v)
  const file = path.resolve(v)
  if (statOrNull(file)?.isDirectory() === true) throw new InvalidArgumentError(`${file} is a directory; give a file path such as ${path.join(file, 'plan.md')}.`)
  // The report goes into a folder that exists: a typo in a path must not create folders.
  const dir = path.dirname(file)
  const st = statOrNull(dir)
  if (st === null) throw new InvalidArgumentError(`the folder ${dir} does not exist; create it first or give a file in an existing folder.`)
  if (!st.isDirectory()) throw new InvalidArgumentError(`${dir} is not a directory, so ${file} cannot be written.`)
  // Checked now, not at the first render: a report nobody can write would fail every write of a long plan.
  const problem = accessProblem(dir, fsConstants.W_OK | fsConstants.X_OK)
  if (problem !== null) throw new InvalidArgumentError(`this user cannot write files in ${dir} (${problem}); give a file in a folder it may write to.`)
  return v
}

function statOrNull (p: string): Stats | null {
  try { return statSync(p) } catch (err) {
    // A path below a folder this user may not search is not "missing": say so where it is asked.
    if ((err as NodeJS.ErrnoException).code === 'EACCES') throw new InvalidArgumentError(`this user cannot reach ${p} (EACCES: a folder above it is not searchable); give a folder it may use.`)
    return null
  }
}

/** A proposal, task or goal id for a steer flag (--approve, --reject): 16 lowercase hex characters. */
export function contentIdArg (v: string): string {
  if (!/^[0-9a-f]{16}$/.test(v)) throw new InvalidArgumentError('expected an id: 16 lowercase hex characters (a proposal_id, node_id or goal_id as the tree and report show it).')
  return v
}

/** --note: the person's words for the decomposers, at most 2000 characters, no control characters but tab and line breaks. */
export function steerNoteArg (v: string): string {
  if (CONTROL_CHARS.test(v)) throw new InvalidArgumentError('control characters are not allowed in a note (tab, newline and carriage return are).')
  if (textLength(v) > STEER_NOTE_MAX) throw new InvalidArgumentError(`a note holds at most ${STEER_NOTE_MAX} characters; this one has ${textLength(v)}.`)
  return v
}
