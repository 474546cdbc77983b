/**
 * extensionTestsPath entry: VS Code's extension host calls run(). Runs every bundled
 * `*.test.js` next to this file, in name order (the files build on each other's peers and plan).
 * MOCHA_GREP in the environment selects tests by title.
 */
import { readdirSync } from 'node:fs'
import * as path from 'node:path'
import Mocha from 'mocha'

export function run (): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', color: false, reporter: 'spec', timeout: 120_000, slow: 10_000, grep: process.env.MOCHA_GREP })
  for (const f of readdirSync(__dirname).filter((n) => n.endsWith('.test.js')).sort()) mocha.addFile(path.join(__dirname, f))
  return new Promise((resolve, reject) => {
    mocha.run((failures) => {
      const total = mocha.suite.total()
      console.log(`${total - failures} passed, ${failures} failed`)
      if (failures > 0) reject(new Error(`${failures} of ${total} extension-host tests failed`))
      else resolve()
    })
  })
}
