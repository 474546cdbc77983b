/**
 * The pieces of the local swarm scripts' live view (scripts/live-view.mjs): the in-place frame
 * fits the terminal, observer output is cut into whole trees, and without a terminal every
 * event is one stamped line with the tree printed once at the end.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, test } from 'node:test'
import { REPO_ROOT } from '../support/peers'

interface View { start: () => void, event: (s: string) => void, tree: (t: string) => void, peers: (n: number) => void, finish: () => void, tty: boolean }
interface LiveViewModule {
  composeFrame: (o: { tree: string[], events: string[], summary: string, rows: number, columns: number }) => string
  fitWidth: (text: string, columns: number) => string
  formatElapsed: (ms: number) => string
  treeTexts: (client: EventEmitter & { closed: Promise<void> }, fn: (text: string) => void) => void
  createLiveView: (o: { stream: { write: (s: string) => boolean, isTTY?: boolean }, tty?: boolean, events?: boolean, now?: () => number }) => View
}
const lv = await import(pathToFileURL(path.join(REPO_ROOT, 'scripts', 'live-view.mjs')).href) as LiveViewModule
const width = (s: string): number => [...s].reduce((n, ch) => n + (/[\u3000-\u9fff\uff00-\uff60]/.test(ch) ? 2 : 1), 0)

describe('live terminal view', () => {
  test('a frame never exceeds the terminal: long trees are cut, the summary stays last, lines never wrap', () => {
    const tree = Array.from({ length: 50 }, (_, i) => `  - leaf ${i} ${'x'.repeat(i * 3)} [pending_execution]`)
    const frame = lv.composeFrame({ tree, events: ['  [executor-1] finished "a"', '  [scorer-1] scored 0.70'], summary: '3.0 s elapsed · 0/50 leaves done · 7 peers', rows: 20, columns: 60 })
    const lines = frame.split('\n')
    assert.ok(lines.length + 1 <= 20, `${lines.length} lines for 20 rows`)
    assert.equal(lines.at(-1), '3.0 s elapsed · 0/50 leaves done · 7 peers')
    assert.match(frame, /… 36 more lines/)
    assert.equal(lines.filter((l) => l.startsWith('  - leaf')).length, 14, '14 leaves + the cut line + blank + 2 events + summary = 19 lines, and log-update counts one more')
    for (const l of lines) assert.ok(width(l) <= 59, l)
    assert.equal(lv.fitWidth('日本への旅行を計画する', 10), '日本への…', 'wide characters count two cells')
    assert.equal(lv.formatElapsed(9_400), '9.4 s')
    assert.equal(lv.formatElapsed(65_000), '1 min 05 s')
  })

  test('observer output lines are cut into whole trees, the last one handed on when the observer is gone', async () => {
    let close!: () => void
    const s = Object.assign(new EventEmitter(), { closed: new Promise<void>((resolve) => { close = resolve }) })
    const got: string[] = []
    lv.treeTexts(s, (t) => { got.push(t) })
    const a = '=== plan for goal abcdef0123456789: 0/2 leaves done, 2 waiting ===\nGoal [decomposed]\n  - one [pending_execution]\n  - two [pending_execution]'
    const b = '=== plan for goal abcdef0123456789: 2/2 leaves done, COMPLETE ===\nGoal [decomposed]\n  - one [done by executor-1]\n  - two [done by executor-2]'
    for (const line of ['a line before any tree', ...a.split('\n'), ...b.split('\n')]) s.emit('stdout', line)
    assert.deepEqual(got, [a], 'the first tree is complete once the next header arrives')
    close()
    await s.closed
    assert.deepEqual(got, [a, b])
  })

  test('without a terminal: one stamped line per event, progress only when it changes, the tree once at the end', () => {
    let out = ''
    let t = 1000
    const view = lv.createLiveView({ stream: { write: (s: string) => { out += s; return true }, isTTY: false }, now: () => t })
    assert.equal(view.tty, false)
    view.start()
    t += 1500
    view.event('  [executor-1] executing "one"')
    const tree = '=== plan for goal abcdef0123456789: 0/2 leaves done, 1 running ===\nGoal [decomposed]\n  - one [claimed by executor-1]'
    view.tree(tree)
    view.tree(tree.replace('claimed by executor-1', 'claimed by executor-1 ')) // same progress: no line
    t += 1000
    view.tree('=== plan for goal abcdef0123456789: 2/2 leaves done, COMPLETE ===\nGoal [decomposed]\n  - one [done by executor-1]')
    view.finish()
    view.event('  [executor-1] executor totals') // after finish: nothing
    assert.deepEqual(out.split('\n'), [
      '[    1.5 s]   [executor-1] executing "one"',
      '[    1.5 s] plan abcdef0123456789: 0/2 leaves done, 1 running',
      '[    2.5 s] plan abcdef0123456789: 2/2 leaves done, COMPLETE',
      '=== plan for goal abcdef0123456789: 2/2 leaves done, COMPLETE ===',
      'Goal [decomposed]',
      '  - one [done by executor-1]',
      ''
    ])
  })
})
