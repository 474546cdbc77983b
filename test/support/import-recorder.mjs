// Preload (node --import) that reports every module URL the ESM loader resolves whose path
// contains one of the packages named in IMPORT_RECORDER_WATCH (comma-separated), so a test can
// tell which packages a process really loaded. Loader hooks run on their own thread; they post
// each match back here. When the process exits, one line `IMPORTED_WATCHED <json array of the
// watched package names that were loaded>` goes to stderr.
import { register } from 'node:module'
import { MessageChannel } from 'node:worker_threads'

const watch = (process.env.IMPORT_RECORDER_WATCH ?? '').split(',').filter((s) => s !== '')
const seen = new Set()
process.on('exit', () => {
  const loaded = watch.filter((name) => [...seen].some((url) => url.includes(`/node_modules/${name}/`)))
  process.stderr.write(`IMPORTED_WATCHED ${JSON.stringify(loaded)}\n`)
})
const { port1, port2 } = new MessageChannel()
port1.on('message', (url) => { seen.add(url) })
port1.unref()
register('./import-recorder-hooks.mjs', { parentURL: import.meta.url, data: { port: port2, watch }, transferList: [port2] })
