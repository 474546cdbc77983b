/**
 * Logging of the peer process: one pino logger writing to stderr (stdout stays free for the
 * observer's output), as pretty text or JSON lines, with one child logger per component
 * (`log.child({ component: 'gossip' })`). Records can also be forwarded to the parent process
 * over IPC (ipc/child.ts). A child of a component logger never binds `component` again: pino
 * would write the key twice per JSON line, and readers keep only the last one (a role's LLM
 * calls bind `llm` instead, so their warnings still name the role).
 *
 * A record's text is shown to people (a terminal, the editor's output channel, the scripts'
 * event lines), and much of it is the swarm's: goal and subgoal text, results, tool output, a
 * model's words in an error. So every string of a record, its message and every string field
 * at any depth (an Error's message and stack too), passes through shownText
 * (plan/protocol/text.ts): JSON already escapes C0 controls, but not C1 or bidi controls, and
 * the text format escapes nothing. The escape is in the value, so a reader that parses the JSON
 * line gets `\u009b`, not the character.
 */
import { pino, type DestinationStream, type Logger } from 'pino'
import pretty from 'pino-pretty'
import { shownStrings, shownText } from '../plan/protocol/text'

export type { Logger }

export type ForwardLevel = 'debug' | 'info' | 'warn' | 'error'

/** A log record as the IPC `log` message carries it. */
export interface ForwardedLog { level: ForwardLevel, component: string, msg: string }

export interface PeerLogger {
  log: Logger
  /** Also hand every record at or above the logger's level to `fn` (null stops forwarding). */
  forward(fn: ((rec: ForwardedLog) => void) | null): void
}

const OMIT = new Set(['level', 'time', 'pid', 'hostname', 'component', 'msg'])

function levelName (n: number): ForwardLevel {
  if (n >= 50) return 'error'
  if (n >= 40) return 'warn'
  if (n >= 30) return 'info'
  return 'debug'
}

/** Renders a JSON log line's extra fields compactly: `msg key=value ...`. */
function flatten (rec: Record<string, unknown>): string {
  const extras = Object.entries(rec).filter(([k]) => !OMIT.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
  const msg = typeof rec.msg === 'string' ? rec.msg : ''
  return extras.length === 0 ? msg : `${msg} ${extras.join(' ')}`
}

/**
 * A log call's arguments with shownText applied to every string in them (shownStrings). An
 * Error logged without a message gives pino its message, so that message is passed escaped.
 */
function shownArgs (args: unknown[]): unknown[] {
  const out = args.map((a) => shownStrings(a))
  const first = args[0]
  const err = first instanceof Error
    ? first
    : typeof first === 'object' && first !== null && !('msg' in first) && (first as { err?: unknown }).err instanceof Error ? (first as { err: Error }).err : undefined
  if (err !== undefined && args.length === 1) out.push(shownText(err.message))
  return out
}

/** pino's Error serializer with shownText applied to what it gives (type, message, stack, cause). */
function shownErr (err: unknown): unknown {
  const serialized: unknown = pino.stdSerializers.err(err as Error)
  // An Error comes out on a prototype of pino's own: its fields are copied to a plain object.
  return typeof serialized === 'object' && serialized !== null ? shownStrings({ ...serialized }) : shownStrings(serialized)
}

/**
 * Creates the process logger.
 * @param opts.format 'text' (pino-pretty) or 'json' (one JSON object per line)
 * @param opts.verbose debug level instead of info
 * @param opts.destination file descriptor to write to (default 2 = stderr)
 */
export function createLogger (opts: { format: 'text' | 'json', verbose: boolean, destination?: number }): PeerLogger {
  const level = opts.verbose ? 'debug' : 'info'
  const fd = opts.destination ?? 2
  const main: DestinationStream = opts.format === 'json'
    ? pino.destination({ dest: fd, sync: true })
    : pretty({ destination: fd, sync: true, colorize: fd === 2 && process.stderr.isTTY === true, ignore: 'pid,hostname,component', messageFormat: '{if component}{component}: {end}{msg}', translateTime: 'HH:MM:ss.l', singleLine: true })
  let sink: ((rec: ForwardedLog) => void) | null = null
  const forwarder: DestinationStream = {
    write (line: string): void {
      if (sink === null) return
      try {
        const rec = JSON.parse(line) as Record<string, unknown>
        sink({ level: levelName(Number(rec.level)), component: typeof rec.component === 'string' ? rec.component : 'peer', msg: flatten(rec) })
      } catch {
        // A record that cannot be forwarded is still on stderr.
      }
    }
  }
  const log = pino({
    level,
    base: undefined,
    hooks: { logMethod (args, method) { method.apply(this, shownArgs(args) as Parameters<typeof method>) } },
    serializers: { err: shownErr }
  }, pino.multistream([{ level, stream: main }, { level, stream: forwarder }]))
  return { log, forward (fn) { sink = fn } }
}
