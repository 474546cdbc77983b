/**
 * What a terminal receives when the swarm's text holds terminal and bidi controls (DESIGN
 * "Processes and folders", the text rule: text.ts shownText): `npm run demo` with a goal holding
 * U+009B (the one-character CSI) and U+202E (a right-to-left override), run on a pseudo-terminal
 * made by util-linux `script`. The offline demo model repeats the goal in its subgoals, results
 * and final answer, so the tree drawn in place, the role events, the summary and the final answer
 * all carry it; the terminal must get `\u009b` and `\u202e` as text, never the characters (in
 * UTF-8 0xC2 0x9B and 0xE2 0x80 0xAE).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import { REPO_ROOT } from '../support/peers'

const DEMO = path.join(REPO_ROOT, 'scripts', 'demo.mjs')
const GOAL = 'Plan a trip \u009b2J to Japan \u202egpj.exe'
const dir = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-escapes-test-'))
const children: Array<ReturnType<typeof spawn>> = []
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

/** The raw bytes `script` wrote to the session file (everything the terminal received). */
async function onTerminal (command: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null, raw: Buffer }> {
  const session = path.join(dir, 'session.typescript')
  const child = spawn('script', ['-qec', command, session], { cwd: REPO_ROOT, env, stdio: ['ignore', 'ignore', 'ignore'] })
  children.push(child)
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => { resolve(c) }))
  return { code, raw: readFileSync(session) }
}

describe('a goal with terminal and bidi controls, on a terminal', { timeout: 240_000 }, () => {
  test('npm run demo: the terminal receives the escapes, never a raw U+009B or U+202E', async () => {
    assert.equal(spawnSync('script', ['--version']).status, 0, 'util-linux `script` is needed to make a pseudo-terminal')
    const report = path.join(dir, 'report.md')
    // The goal travels in the environment: no shell quoting of the control characters.
    const command = `stty rows 200 cols 160; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(DEMO)} "$HOSTILE_GOAL" --report ${JSON.stringify(report)} --timeout-ms 150000`
    const r = await onTerminal(command, { ...process.env, HOSTILE_GOAL: GOAL, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' })
    const text = r.raw.toString('utf8')
    assert.equal(r.code, 0, text.slice(-3000))
    assert.equal(r.raw.includes(Buffer.from([0xc2, 0x9b])), false, 'no raw U+009B (0xC2 0x9B) reached the terminal')
    assert.equal(r.raw.includes(Buffer.from('\u202e', 'utf8')), false, 'no raw U+202E reached the terminal')
    assert.ok(text.includes('Plan a trip \\u009b2J to Japan \\u202egpj.exe'), 'the goal is shown escaped')
    assert.match(text, /=== final answer ===[\s\S]*\\u009b2J/, 'the final answer, which repeats the goal, is shown escaped')
    // The report on disk is a document shown to people too.
    const md = readFileSync(report, 'utf8')
    assert.doesNotMatch(md, /[\u009b\u202e]/)
    assert.ok(md.includes('\\u009b2J to Japan \\u202egpj.exe'))
  })
})
