// Preload (node --import) for the bundled peer: records every module id required whose name
// contains one of IMPORT_RECORDER_WATCH (comma-separated) and prints, at exit, one line
// `REQUIRED_WATCHED <json array of the watched names that were required>` on stderr.
import Module from 'node:module'

const watch = (process.env.IMPORT_RECORDER_WATCH ?? '').split(',').filter((s) => s !== '')
const seen = new Set()
const load = Module._load
Module._load = function (request, parent, isMain) {
  for (const w of watch) if (request.includes(w)) seen.add(w)
  return load.call(this, request, parent, isMain)
}
process.on('exit', () => { process.stderr.write(`REQUIRED_WATCHED ${JSON.stringify(watch.filter((w) => seen.has(w)))}\n`) })
