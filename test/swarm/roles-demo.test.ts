/**
 * The user-facing scripts: `npm run demo` runs the whole local swarm offline, a quorum accepting
 * every split, and exits 0 with a complete report; `npm run swarm` without a model exits 2 listing the options.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { TEXT_MAX_CHARS } from '../../src/plan/protocol/limits'
import { REPO_ROOT } from '../support/peers'

test('npm run demo: real processes plan the default goal offline, every split accepted by quorum, with a dependency, a sandboxed leaf and an MCP tool call, write the report, print the final answer and exit 0', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-demo-test-'))
  const report = path.join(dir, 'report.md')
  const logDir = path.join(dir, 'logs')
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'scripts', 'demo.mjs'), '--quiet', '--report', report, '--timeout-ms', '150000', '--log-dir', logDir], {
    cwd: REPO_ROOT, env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe']
  })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }) })
  let out = ''
  child.stdout.on('data', (d: Buffer) => { out += d.toString() })
  child.stderr.on('data', (d: Buffer) => { out += d.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
  assert.equal(code, 0, out.slice(-3000))
  const ok = /OK: all (\d+) leaves done and the final answer synthesized/.exec(out)
  assert.ok(ok !== null, out.slice(-2000))
  const leaves = Number(ok[1])
  assert.ok(leaves >= 2)
  const counts = new RegExp(`leaves: ${leaves}; syntheses: (\\d+); results: (\\d+); duplicated executions: 0`).exec(out)
  assert.ok(counts !== null, out.slice(-2000))
  const syntheses = Number(counts[1])
  assert.ok(syntheses >= 1)
  assert.equal(Number(counts[2]), leaves + syntheses, 'one result per leaf and per synthesis')
  // The demo model scores its own splits above the minimum score: a quorum accepted every split,
  // the timeout fallback none. The observer's plan_complete record counts the winning tree's
  // accepted splits by their `fallback` field; one split per decomposed goal, each synthesized.
  const records = readFileSync(path.join(logDir, 'observer.log'), 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
  const complete = records.find((r) => r.event === 'plan_complete')
  assert.ok(complete !== undefined, 'the observer logged plan_complete')
  assert.deepEqual({ quorum: complete.splits_by_quorum, fallback: complete.splits_by_fallback }, { quorum: syntheses, fallback: 0 })
  assert.match(out, new RegExp(`^splits: ${syntheses} accepted by quorum, 0 by the timeout fallback$`, 'm'))
  // The final answer comes last and is built from the root's parts (the demo model lists each one).
  const answer = out.slice(out.indexOf('=== final answer ==='))
  assert.match(answer, /^=== final answer ===\n\*\*\[demo output\]\*\* Synthetic combination of the parts/)
  const parts = Number(/Combined from (\d+) parts:/.exec(answer)?.[1])
  assert.ok(parts >= 3, answer)
  assert.equal(answer.split('\n').filter((l) => /^\d+\. \*\*.+\*\*: \S/.test(l)).length, parts)
  // With bubblewrap the demo model's top-level split holds a can_run_code leaf run in the sandbox;
  // without it the executors say why and no leaf needs it.
  const sandbox = /can_run_code: (\d+) leaf programs? ran in the bubblewrap sandbox/.exec(out)
  if (sandbox === null) assert.match(out, /can_run_code: no leaf ran in the sandbox \(can_run_code is not offered/)
  else assert.equal(Number(sandbox[1]), 1)
  // executor-1 runs the repository's MCP server: the top-level split's tool step is a
  // can_query_api leaf whose answer comes from a real call of its travel_facts tool.
  assert.match(out, /^can_query_api: 1 MCP tool call \(travel-facts__travel_facts\)$/m)
  assert.match(answer, /^\d\. \*\*Research the options — Plan a two-week trip to Japan\*\*: Travel facts for Japan: currency JPY; time zone Asia\/Tokyo; JR Pass 7 days: 50000 JPY; .*\(from the MCP tool travel-facts__travel_facts\)$/m)
  assert.match(out, /LLM calls by decomposers \(2 peers\): \d+ calls/)
  assert.match(out, /LLM calls by executors \(2 peers\): \d+ calls/)
  assert.match(out, /=== plan for goal [0-9a-f]{16}: (\d+)\/\1 leaves done, COMPLETE ===/)
  assert.ok(existsSync(report))
  const md = readFileSync(report, 'utf8')
  assert.match(md, /## Plan a two-week trip to Japan/)
  // The terminal's call counts add up to the report's spend once the aborted calls (in no result) are taken out.
  const byRole = [...out.matchAll(/^LLM calls by (\w+)s \(\d+ peers?\): (\d+) calls(?: \((\d+) aborted: not in the report's spend\))?, (\d+) retries/gm)]
  assert.deepEqual(byRole.map((m) => m[1]), ['decomposer', 'scorer', 'executor'], out.slice(-2000))
  const spent = Number(/^\*\*Cost:\*\* (\d+) calls/m.exec(md)?.[1])
  assert.equal(byRole.reduce((sum, m) => sum + Number(m[2]) - Number(m[3] ?? 0), 0), spent, `terminal: ${byRole.map((m) => m[0]).join(' | ')}; report: ${spent} calls`)
  assert.match(md, new RegExp(`\\*\\*complete\\*\\*, ${leaves} of ${leaves} leaves done`))
  assert.equal((md.match(/— \*done\*/g) ?? []).length, leaves)
  assert.match(md, /\[demo output\]/)
  // The final answer heads the report, and the plan has at least one dependency.
  assert.ok(md.indexOf('### Final answer') > 0 && md.indexOf('### Final answer') < md.indexOf('### Plan tree'))
  assert.match(md, /— \*done\*, needs `can_\w+`, by `executor-\d`, after (result \d+|")/)
  // The tool leaf's result, as the report shows it: the model's answer quoting the tool, then the call's trace.
  const toolLeaf = /^ {2}- \\\[demo output\\\] Research the options — Plan a two-week trip to Japan — \*done\*, needs `can_query_api`, by `executor-1` \(result (\d+)\)$/m.exec(md)
  assert.ok(toolLeaf !== null, md)
  const n = Number(toolLeaf[1])
  const start = md.indexOf(`\n${n}. **`)
  assert.ok(start >= 0, `result ${n} in the report`)
  const end = md.indexOf(`\n${n + 1}. **`, start)
  const result = md.slice(start, end < 0 ? undefined : end)
  assert.match(result, /^ {3}> - `travel-facts__travel_facts`: Travel facts for Japan: .*JR Pass 7 days: 50000 JPY/m, result)
  assert.match(result, /^ {3}> 1\. `travel-facts__travel_facts` \{"city":"Japan"\} \(\d+ ms\)\n {3}> {4}> Travel facts for Japan: .*JR Pass 7 days: 50000 JPY/m, result)
})

test('npm run swarm without a model exits 2 and lists the options', () => {
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'swarm.mjs'), '--goal', 'Plan a trip'], {
    cwd: REPO_ROOT, env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, encoding: 'utf8'
  })
  assert.equal(r.status, 2)
  assert.match(r.stderr, /no model configured/)
  assert.match(r.stderr, /ANTHROPIC_API_KEY=/)
  assert.match(r.stderr, /--llm openai-compatible --model .* --llm-base-url/)
  assert.match(r.stderr, /npm run demo/)
  const r2 = spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'swarm.mjs'), '--goal', 'Plan a trip', '--llm', 'openai-compatible'], {
    cwd: REPO_ROOT, env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, encoding: 'utf8'
  })
  assert.equal(r2.status, 2)
  assert.match(r2.stderr, /needs --model and --llm-base-url/)
})

test('an invalid goal is refused before any peer starts (exit 2, naming the limit) and the report is left alone', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'goal-swarm-demo-bad-'))
  try {
    const report = path.join(dir, 'report.md')
    writeFileSync(report, 'the previous report\n')
    const limit = TEXT_MAX_CHARS
    assert.equal(limit, 4000)
    const run = (script: string, args: string[]) => spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', script), ...args], {
      cwd: REPO_ROOT, env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' }, encoding: 'utf8', timeout: 20_000
    })
    const cases: Array<[string, string[], RegExp]> = [
      ['demo.mjs', ['', '--report', report], new RegExp(`^demo: the goal is empty; give 1 to ${limit} characters of text, e\\.g\\. npm run demo -- "Plan a two-week trip to Japan"\\n$`)],
      ['demo.mjs', ['   ', '--report', report], /^demo: the goal is empty/],
      ['demo.mjs', ['x'.repeat(limit + 1), '--report', report], new RegExp(`^demo: the goal is ${limit + 1} characters long; the limit is ${limit}`)],
      ['demo.mjs', ['Plan\u0007a trip', '--report', report], /^demo: the goal contains the control character U\+0007/],
      ['swarm.mjs', ['--goal', 'y'.repeat(limit + 7), '--llm', 'openai-compatible', '--model', 'm', '--llm-base-url', 'http://127.0.0.1:9/v1', '--report', report],
        new RegExp(`^swarm: the goal is ${limit + 7} characters long; the limit is ${limit}`)]
    ]
    for (const [script, args, want] of cases) {
      const r = run(script, args)
      assert.equal(r.status, 2, `${script} ${args[0]?.slice(0, 20)}: ${r.stderr}`)
      assert.match(r.stderr, want)
      assert.doesNotMatch(r.stdout, /started|submitted|building/, 'nothing started')
    }
    assert.equal(readFileSync(report, 'utf8'), 'the previous report\n')
    assert.deepEqual(readdirSync(dir), ['report.md'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
