// @vscode/test-cli config: runs the extension-host mocha suite in desktop VS Code (downloaded by
// @vscode/test-electron, so it needs network). Build the suite first:
//   npm run build && npm run test:vscode:build && npx vscode-test
// Offline, the same suite runs in code-server through test/vscode/run.mjs.
import { defineConfig } from '@vscode/test-cli'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

export default defineConfig({
  label: 'extension-host',
  files: 'out/test/vscode/suite/*.test.js',
  // A throwaway folder: the tests write exported plans and results only into temp dirs.
  workspaceFolder: mkdtempSync(path.join(tmpdir(), 'goal-swarm-ws-')),
  launchArgs: ['--disable-extensions'],
  mocha: { ui: 'tdd', timeout: 120_000, slow: 10_000, color: true }
})
