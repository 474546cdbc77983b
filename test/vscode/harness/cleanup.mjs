// Cleanup registry: everything the harness starts (code-server, browsers, temp dirs) registers
// a stop function here, so a failing step, a timeout or Ctrl-C still stops it.
const tasks = new Set()

/** Registers `fn` to run at cleanup; returns a function that unregisters it. */
export function onCleanup (fn) {
  tasks.add(fn)
  return () => tasks.delete(fn)
}

/** Runs every registered cleanup, newest first, each at most once; errors are printed, not thrown. */
export async function runCleanups () {
  const pending = [...tasks].reverse()
  tasks.clear()
  for (const fn of pending) {
    try {
      await fn()
    } catch (err) {
      console.error(`[vscode] cleanup failed: ${err?.message ?? err}`)
    }
  }
}

let installed = false
/**
 * Runs the cleanups on SIGINT/SIGTERM/SIGHUP and on an uncaught error, then exits non-zero.
 * Call once from the entry script.
 */
export function cleanupOnSignals () {
  if (installed) return
  installed = true
  const bail = (why, code) => {
    console.error(`[vscode] ${why}: stopping everything the harness started`)
    runCleanups().finally(() => process.exit(code))
  }
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.once(sig, () => bail(sig, 130))
  process.once('uncaughtException', (err) => { console.error(err); bail('uncaught exception', 1) })
  process.once('unhandledRejection', (err) => { console.error(err); bail('unhandled rejection', 1) })
}
