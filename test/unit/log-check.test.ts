/**
 * The real-editor tier's log check (test/vscode/ui/logCheck.mjs): which entries of an
 * extension host log count as errors of the extension.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
// @ts-expect-error the harness is plain JavaScript without type declarations
import { extensionErrors, logErrors } from '../vscode/ui/logCheck.mjs'

const LOG = [
  '2026-12-03 07:28:10.035 [info] Extension host with pid 3540 started',
  '2026-12-03 07:28:11.000 [error] Unable to refresh tree view goalSwarm.plan: Canceled',
  '2026-12-03 07:29:32.090 [info] Extension host terminating: received terminate message from renderer',
  '2026-12-03 07:29:32.302 [error] Unable to refresh tree view goalSwarm.plan: Canceled',
  '2026-12-03 07:29:32.310 [error] Error: goalSwarm command failed',
  '    at stack (goal-swarm.goal-swarm/dist/extension.js:1:1)',
  '2026-12-03 07:29:40.000 [info] Extension host with pid 3600 started',
  '2026-12-03 07:29:41.000 [error] Unable to refresh tree view goalSwarm.plan: Canceled'
].join('\n')

test('a Plan view redraw cancelled while the window closes is not an error of the extension; the same before the close, or any other error after it, is', () => {
  const errors = (extensionErrors(logErrors(LOG)) as string[]).map((e) => e.split('\n')[0]?.slice(32))
  assert.deepEqual(errors, [
    'Unable to refresh tree view goalSwarm.plan: Canceled',
    'Error: goalSwarm command failed',
    'Unable to refresh tree view goalSwarm.plan: Canceled'
  ])
})

test('a row asked for just after its redraw is VS Code answering with none, not an error of the extension; a reveal of an unknown row still is', () => {
  const log = [
    "2026-12-03 17:36:45.964 [error] No tree item with id '1/545a123d1c4a162a' found.",
    "2026-12-03 17:36:46.100 [error] Error: Data tree node not found: 1/545a123d1c4a162a"
  ].join('\n')
  assert.deepEqual((extensionErrors(logErrors(log)) as string[]).map((e) => e.slice(24)), ['[error] Error: Data tree node not found: 1/545a123d1c4a162a'])
})
