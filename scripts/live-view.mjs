// What the local swarm scripts show while a plan runs. On a terminal: the plan tree drawn in
// place (log-update rewrites only the lines that changed), the latest role events under it
// and a one-line summary with the elapsed time. Elsewhere (CI logs, pipes): one line per event,
// each stamped with the elapsed time, and the final tree once at the end.
import { createLogUpdate } from 'log-update'
import stringWidth from 'string-width'

/** The observer's tree header (src/plan/read/report.ts renderTreeText). */
const HEADER = /^=== plan for goal (\S+): (.*) ===$/

/** Role events kept under the tree on a terminal. */
const RECENT_EVENTS = 6

/** `text` cut to at most `columns` terminal cells, with … when cut (wide characters count 2). */
export function fitWidth (text, columns) {
  if (stringWidth(text) <= columns) return text
  let out = ''
  for (const ch of text) {
    if (stringWidth(out + ch) > columns - 1) break
    out += ch
  }
  return out + '…'
}

/** Elapsed time as people read it: 9.4 s, 1 min 05 s. */
export function formatElapsed (ms) {
  const s = ms / 1000
  if (s < 60) return `${s.toFixed(1)} s`
  return `${Math.floor(s / 60)} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`
}

/**
 * Collects the observer's stdout lines into whole tree texts: each tree starts with its header
 * line, and a tree is handed on once its write has been read (`fn(text)` with the header first).
 * @param {{ on: (event: 'stdout', fn: (line: string) => void) => unknown, closed: Promise<void> }} client
 *   the observer's PeerClient (src/peer/ipc/parent.ts), which splits its stdout into lines
 * @param {(text: string) => void} fn
 */
export function treeTexts (client, fn) {
  let block = []
  let timer = null
  const flush = () => { timer = null; if (block.length > 0) fn(block.join('\n')) }
  client.on('stdout', (line) => {
    if (HEADER.test(line)) { if (block.length > 0) fn(block.join('\n')); block = [] }
    if (block.length > 0 || HEADER.test(line)) block.push(line)
    // One write of the observer is one tree; pipes may split it, so wait for a quiet moment.
    if (timer === null) timer = setTimeout(flush, 20)
  })
  void client.closed.then(() => { if (timer !== null) clearTimeout(timer); flush() })
}

/**
 * The live frame: the tree, a blank line and the latest events (when any), then the summary
 * line last. Never taller than `rows` (log-update redraws everything on every change of a frame
 * taller than the terminal): a long tree is cut with "… N more lines". Lines are cut to the
 * terminal width so none wraps.
 * @param {{ tree: string[], events: string[], summary: string, rows: number, columns: number }} o
 * @returns {string} the frame, lines joined with \n
 */
export function composeFrame (o) {
  const columns = Math.max(20, o.columns - 1)
  const rows = Math.max(5, o.rows)
  const events = o.events.length > 0 ? ['', ...o.events] : []
  // log-update counts the line after the frame's last newline too.
  const room = Math.max(1, rows - 2 - events.length)
  const tree = o.tree.length > room ? [...o.tree.slice(0, room - 1), `  … ${o.tree.length - room + 1} more lines`] : o.tree
  return [...tree, ...events, o.summary].map((l) => fitWidth(l, columns)).join('\n')
}

/**
 * The view of one run: call start() when the plan is submitted, event() for each role event,
 * tree() with each tree text the observer prints, finish() when the run is over.
 * @param {object} o
 * @param {NodeJS.WriteStream} [o.stream] where the view goes (default process.stdout)
 * @param {boolean} [o.tty] draw in place (default: the stream is a terminal with a known size)
 * @param {boolean} [o.events] show role events (default true)
 * @param {() => number} [o.now] clock, ms
 * @returns {{ start: () => void, event: (line: string) => void, tree: (text: string) => void, peers: (n: number) => void, finish: () => void, tty: boolean }}
 */
export function createLiveView (o = {}) {
  const stream = o.stream ?? process.stdout
  const tty = o.tty ?? (stream.isTTY === true && (stream.rows ?? 0) > 0 && (stream.columns ?? 0) > 0)
  const showEvents = o.events !== false
  const now = o.now ?? Date.now
  let t0 = null
  /** When the tree first said the plan is over: the summary's clock stops there. */
  let endAt = null
  let tree = null
  let lastProgress = null
  let peerCount = 0
  const recent = []
  let tick = null
  let finished = false
  const draw = tty ? createLogUpdate(stream) : null
  const stamp = () => `[${formatElapsed(t0 === null ? 0 : now() - t0).padStart(9)}]`
  const line = (s) => { stream.write(s + '\n') }

  function frame () {
    const header = tree === null ? null : HEADER.exec(tree.split('\n')[0])
    return composeFrame({
      tree: tree === null ? ['(waiting for the first plan message)'] : tree.split('\n').slice(1),
      events: showEvents ? recent : [],
      summary: `${formatElapsed((endAt ?? now()) - t0)} elapsed · ${header === null ? 'no plan yet' : header[2]} · ${peerCount} peers`,
      rows: stream.rows ?? 24,
      columns: stream.columns ?? 80
    })
  }
  const redraw = () => { if (draw !== null && t0 !== null && !finished) draw(frame()) }

  return {
    tty,
    /** The plan starts: the elapsed time counts from now, and a terminal gets the live frame. */
    start () {
      t0 = now()
      if (tty) { redraw(); tick = setInterval(redraw, 1000); tick.unref() }
    },
    /** A role event (one line, e.g. "[executor-1] ran leaf …"). */
    event (s) {
      if (!showEvents || finished) return
      if (!tty || t0 === null) { line(t0 === null ? s : `${stamp()} ${s}`); return }
      recent.push(s)
      if (recent.length > RECENT_EVENTS) recent.shift()
      redraw()
    },
    /** The observer's latest tree text (header line first). */
    tree (text) {
      if (finished) return
      tree = text
      const header = HEADER.exec(text.split('\n')[0])
      if (endAt === null && t0 !== null && header !== null && /(COMPLETE|FINISHED WITH FAILURES)$/.test(header[2])) endAt = now()
      if (tty) { redraw(); return }
      const progress = header === null ? null : header[2]
      if (progress !== null && progress !== lastProgress) {
        lastProgress = progress
        line(`${stamp()} plan ${header[1]}: ${progress}`)
      }
    },
    /** How many peers run (shown in the summary). */
    peers (n) { peerCount = n; redraw() },
    /** The plan is over: the last frame stays on a terminal; elsewhere the final tree is printed once. */
    finish () {
      if (finished) return
      if (tick !== null) clearInterval(tick)
      if (draw !== null && t0 !== null) { draw(frame()); draw.done() }
      finished = true
      if (!tty && tree !== null) line(tree)
    }
  }
}
