/**
 * extensionTestsPath entry for the start-up benchmark (bench/startup.ts): run inside a real
 * VS Code extension host (code-server, test/vscode harness), it activates the extension once and
 * times activate() and the main peer's `ready`, then writes them to activation.json next to this
 * bundle. The harness reads mocha-style counts from the console, so it prints one.
 */
import { writeFileSync } from 'node:fs'
import * as path from 'node:path'
import * as vscode from 'vscode'
import type { GoalSwarmTestApi } from '../../src/extension/extension'

export const RESULT_FILE = 'activation.json'

export async function run (): Promise<void> {
  const out: Record<string, unknown> = { vscode: vscode.version, app: vscode.env.appName }
  try {
    const ext = vscode.extensions.getExtension<GoalSwarmTestApi | undefined>('goal-swarm.goal-swarm')
    if (ext === undefined) throw new Error('extension goal-swarm.goal-swarm is not installed in this host')
    out.alreadyActive = ext.isActive
    const t0 = performance.now()
    const api = await ext.activate()
    out.activateMs = performance.now() - t0
    if (api !== undefined) {
      await api.peers.main.whenReady()
      out.peerReadyMs = performance.now() - t0
    }
    console.log('1 passed, 0 failed')
  } catch (err) {
    out.error = (err as Error).message
    console.log('0 passed, 1 failed')
    throw err
  } finally {
    writeFileSync(path.join(__dirname, RESULT_FILE), JSON.stringify(out))
  }
}
