/**
 * Logging of the peer process: one pino logger writing to stderr (stdout stays free for the
 * observer's output), as pretty text or JSON lines, with one child logger per component
 * (`log.child({ component: 'gossip' })`). Records can also be forwarded to the parent process
 * over IPC (ipc/child.ts). A child of a component logger never binds `component` again: pino
 * would write the key twice per JSON line, and readers keep only the last one (a role's LLM
 * calls bind `llm` instead, so their warnings still name the role).
 */
import { pino, type DestinationStream, type Logger } from 'pino'
import pretty from 'pino-pretty'

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
  const log = pino({ level, base: undefined }, pino.multistream([{ level, stream: main }, { level, stream: forwarder }]))
  return { log, forward (fn) { sink = fn } }
}
