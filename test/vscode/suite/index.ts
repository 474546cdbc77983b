/**
 * extensionTestsPath entry: VS Code's extension host calls run(). Runs every bundled
 * `*.test.js` next to this file, in name order (later files reuse the plan of earlier ones but
 * make their own when run alone). MOCHA_GREP in the environment selects tests by title;
 * MOCHA_ORDER=reverse runs the files backwards (as @vscode/test-cli may order them).
 */
import { readdirSync } from 'node:fs'
import * as path from 'node:path'
import Mocha from 'mocha'

export function run (): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', color: false, reporter: 'spec', timeout: 120_000, slow: 10_000, grep: process.env.MOCHA_GREP })
  const files = readdirSync(__dirname).filter((n) => n.endsWith('.test.js')).sort()
  if (process.env.MOCHA_ORDER === 'reverse') files.reverse()
  for (const f of files) mocha.addFile(path.join(__dirname, f))
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      // Counted from what ran: with MOCHA_GREP most tests are left out, and they did not pass.
      const passed = runner.stats?.passes ?? 0
      console.log(`${passed} passed, ${failures} failed, ${runner.stats?.pending ?? 0} pending`)
      if (failures > 0) reject(new Error(`${failures} of ${passed + failures} extension-host tests failed`))
      else resolve()
    })
    // The spec reporter prints a failure's error only at the end of the run; a run cut off by
    // the host suite's deadline would never say why a test failed, so say it when it fails.
    runner.on('fail', (test, err: Error) => {
      console.log(`FAILED: ${test.fullTitle()}\n${err.stack ?? err.message}`)
    })
  })
}
