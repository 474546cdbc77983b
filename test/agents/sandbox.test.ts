/**
 * can_run_code in the bubblewrap sandbox, through the executor, the real SDK and the LLM
 * stand-in: hostile programs (network, ~/.ssh and the peer's key file, writes outside the work
 * dir, a fork bomb, an endless loop, 4 GiB, 100 MB of output) are contained and reported as
 * such while the executor goes on to the next leaf; a demo program runs end to end; without a
 * sandbox can_run_code is neither announced nor taken. As root the tier installs bubblewrap
 * with apt-get when it is missing; as another user without it these tests are skipped.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import type { PromptNode } from '../../src/plan/protocol/schemas'
import { nowMicros } from '../../src/plan/protocol/time'
import { startExecutor } from '../../src/peer/roles/executor'
import { startAnnouncer, startRole } from '../../src/peer/roles/index'
import { PROGRAM_SCHEMA_NAME, runCodeSystem } from '../../src/peer/roles/prompts'
import { detectSandbox, sandboxLimits } from '../../src/peer/sandbox/index'
import { accepted, proposal, promptNode, rootGoal } from '../support/fixtures'
import { demoResponder } from '../support/llm-standin'
import { waitUntil } from '../support/wait'
import { ensureTool } from '../support/netns'
import { publishAccepted, publishedOf, World } from './harness'

const missing = ensureTool('bwrap', 'bubblewrap', ['--version'])
const detection = detectSandbox({ fresh: true })
const skip = missing ?? (detection.available ? false : detection.reason)

/** Short limits so every contained program ends within a few seconds; the capped output still fits inline (MAX_INLINE_OUTPUT). */
const LIMITS = { wallMs: 3000, cpuS: 2, memoryMb: 256, maxProcs: 32, outputBytes: 16 * 1024, workDirMb: 16 }

/** Publishes a root goal with an accepted split of can_run_code leaves and their prompt nodes. */
async function seedCodeLeaves (w: World, texts: string[]) {
  const user = await w.hub.addPeer({ label: 'user' })
  const dec = await w.hub.addPeer({ label: 'dec' })
  const sc = await w.hub.addPeer({ label: 'sc' })
  const sc2 = await w.hub.addPeer({ label: 'sc2' })
  const root = rootGoal('Check what a sandboxed program can reach', user.peerId, nowMicros())
  const p = proposal(root.goal_id, texts, dec.peerId, { at: nowMicros() })
  const a = accepted(p, { atomic: true, capability: texts.map(() => 'can_run_code' as const), confirming: [{ scorer_peer: sc.peerId, score: 0.9 }, { scorer_peer: sc2.peerId, score: 0.9 }] })
  await user.publish('goal', root)
  await dec.publish('proposal', p)
  await publishAccepted(a, [sc, sc2], sc)
  const nodes = texts.map((_, i) => promptNode(a, i))
  for (const n of nodes) await sc.publish('node', n)
  await w.hub.idle()
  return { user, nodes }
}

/** The host uid sandboxed programs run as (root drops to nobody). */
const sandboxUid = detection.available ? (detection.tools.uid ?? process.getuid?.() ?? -1) : -1

/** Python processes of the sandbox's user still alive on the host (a fork bomb must leave none). */
function sandboxPythons (): number {
  let n = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8')
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      if (/^Uid:\s+(\d+)/m.exec(status)?.[1] === String(sandboxUid) && cmd.includes('FORKBOMB')) n++
    } catch {}
  }
  return n
}

test('hostile programs are contained and reported as such; the executor keeps working', { skip, timeout: 120_000 }, async (t) => {
  const w = await World.create()
  const dir = mkdtempSync(path.join(tmpdir(), 'gs-sandbox-'))
  t.after(async () => { await w.close(); rmSync(dir, { recursive: true, force: true }) })
  // The peer's own files: its key file and data dir, with a secret the program must not see.
  const identityDir = path.join(dir, 'identities')
  mkdirSync(identityDir)
  const keyFile = path.join(identityDir, 'coder.key')
  writeFileSync(keyFile, 'SECRET-KEY-MATERIAL\n')
  const escapee = path.join(dir, 'escaped.txt')
  const standinPort = Number(new URL(w.standin.url).port)
  const probe = (paths: string[]) => [
    'import os',
    `for p in ${JSON.stringify(paths)}:`,
    '    try:',
    '        if os.path.isdir(p): print("LISTED", p, os.listdir(p))',
    '        else: print("READ", p, open(p).read())',
    '    except OSError as e: print("absent", p, type(e).__name__)'
  ].join('\n')
  const programs: Record<string, { language: 'node' | 'python3', program: string }> = {
    'Open a network connection': {
      language: 'python3',
      program: [
        'import socket',
        `for host, port in [("127.0.0.1", ${standinPort}), ("1.1.1.1", 80)]:`,
        '    try:',
        '        socket.create_connection((host, port), timeout=2).close(); print("CONNECTED", host)',
        '    except OSError as e: print("failed", host, e.errno)'
      ].join('\n')
    },
    'Read the SSH keys and the peer key file': { language: 'python3', program: probe([path.join(homedir(), '.ssh'), '/root/.ssh', inSandboxHome('.ssh'), keyFile, identityDir, homedir()]) },
    'Write outside the work dir': {
      language: 'python3',
      program: [
        `for p in [${JSON.stringify(escapee)}, "/usr/escaped.txt", "/escaped.txt", "/dev/escaped.txt", "/work/inside.txt"]:`,
        '    try:',
        '        open(p, "w").write("x"); print("WROTE", p)',
        '    except OSError as e: print("refused", p, type(e).__name__)'
      ].join('\n')
    },
    'Fork without end': { language: 'python3', program: '# FORKBOMB\nimport os\nwhile True:\n    try: os.fork()\n    except OSError: pass' },
    'Loop forever': { language: 'node', program: 'for (;;) {}' },
    'Allocate 4 GiB': { language: 'python3', program: 'block = bytearray(4 << 30)\nprint("ALLOCATED", len(block))' },
    'Print 100 MB': { language: 'python3', program: 'import sys\nsys.stdout.write("x" * 100_000_000)\nprint("PRINTED ALL")' },
    'Compute six times seven': { language: 'node', program: 'console.log("answer", 6 * 7)' }
  }
  const texts = Object.keys(programs)
  const { user, nodes } = await seedCodeLeaves(w, texts)
  w.standin.respondWith((req) => {
    const task = /^Task: (.*)$/m.exec(req.prompt)?.[1] ?? ''
    const p = programs[task]
    return req.schemaName === PROGRAM_SCHEMA_NAME && p !== undefined ? { json: p } : { status: 400, message: `unexpected request for "${task}"` }
  })
  const e = await w.agent('executor', { capabilities: ['can_run_code'], identityDir, dataDir: path.join(dir, 'coder'), name: 'coder', sandbox: LIMITS }, 'coder')
  w.track(startAnnouncer(e.ctx))
  // In split order, so the harmless program runs after every hostile one.
  w.track(startExecutor(e.ctx, e.llm, { order: (ns: PromptNode[]) => [...ns].sort((a, b) => a.index - b.index) }))

  await waitUntil('a result for every leaf', () => nodes.every((n) => user.state.resultsFor(n.node_id).length === 1), 90_000)
  const out = (i: number) => {
    const r = user.state.resultsFor(nodes[i]!.node_id)[0]!
    assert.match(r.output, /^\*\*Ran in a sandbox:\*\* (node|python3), exit code /)
    assert.match(r.output, /### Program\n/)
    return r
  }
  const net = out(0)
  // The stand-in listens on the host's 127.0.0.1:port; the sandbox's own loopback refuses (ECONNREFUSED).
  assert.match(stdoutOf(net.output), /^failed 127\.0\.0\.1 111$/m, 'the host loopback (the stand-in) is out of reach')
  // No route out at all (ENETUNREACH).
  assert.match(stdoutOf(net.output), /^failed 1\.1\.1\.1 101$/m)
  assert.doesNotMatch(stdoutOf(net.output), /CONNECTED/)

  const files = out(1)
  assert.doesNotMatch(files.output, /SECRET-KEY-MATERIAL/)
  assert.doesNotMatch(stdoutOf(files.output), /LISTED|READ /)
  assert.match(stdoutOf(files.output), new RegExp(`absent ${keyFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} FileNotFoundError`))

  const writes = out(2)
  assert.equal(existsSync(escapee), false, 'nothing was written to the host')
  assert.match(stdoutOf(writes.output), /refused \/usr\/escaped.txt OSError/)
  assert.match(stdoutOf(writes.output), /refused \/escaped.txt OSError/)
  assert.match(stdoutOf(writes.output), /refused \/dev\/escaped.txt OSError/)
  assert.match(stdoutOf(writes.output), /WROTE \/work\/inside.txt/)

  const bomb = out(3)
  assert.equal(bomb.success, false)
  assert.match(bomb.output, /exit code none \(killed by the sandbox\)/)
  assert.match(bomb.output, /wall-clock time limit reached/)
  await waitUntil('no process of the fork bomb left', () => sandboxPythons() === 0, 10_000)

  const loop = out(4)
  assert.equal(loop.success, false)
  assert.match(loop.output, /(CPU|wall-clock) time limit reached/)

  const mem = out(5)
  assert.equal(mem.success, false)
  assert.match(mem.output, /memory limit reached/)
  assert.match(mem.output, /MemoryError/)
  assert.equal(stdoutOf(mem.output), '')

  const flood = out(6)
  assert.equal(flood.success, false)
  assert.match(flood.output, /output limit reached/)
  assert.doesNotMatch(stdoutOf(flood.output), /PRINTED ALL/)
  assert.match(stdoutOf(flood.output), /^x{1000}/)
  assert.equal(stdoutOf(flood.output).length, LIMITS.outputBytes, 'exactly the cap is kept')
  assert.ok(flood.output_bytes < LIMITS.outputBytes + 4096, `output bytes ${flood.output_bytes}`)

  const fine = out(7)
  assert.equal(fine.success, true)
  assert.match(fine.output, /exit code 0/)
  assert.match(fine.output, /### stdout\n```+\nanswer 42\n/)
  // One model call per leaf; every one asked for a program with the sandbox's rules.
  const reqs = w.standin.requests
  assert.equal(reqs.length, texts.length)
  assert.ok(reqs.every((r) => r.schemaName === PROGRAM_SCHEMA_NAME && r.system === runCodeSystem(sandboxLimits(LIMITS))))
  assert.equal(publishedOf(e.peer, 'result').length, texts.length)
})

/** The stdout block of a result document ('' when it says empty). */
function stdoutOf (doc: string): string {
  const m = /### stdout\n(?:_\(empty\)_|(`{3,})\n([\s\S]*?)\n?\1\n)/.exec(doc)
  assert.ok(m !== null, `no stdout section in ${doc.slice(0, 600)}`)
  return m[2] ?? ''
}

/** `~/name` as the sandbox sees it: its HOME is the work dir. */
function inSandboxHome (name: string): string {
  return `/work/${name}`
}

test('a can_run_code leaf end to end: the demo model writes a program, the sandbox runs it, the result shows program and output', { skip, timeout: 60_000 }, async (t) => {
  const w = await World.create()
  t.after(() => w.close())
  const { user, nodes } = await seedCodeLeaves(w, ['Count the words of the trip title'])
  w.standin.respondWith(demoResponder)
  const e = await w.agent('executor', { capabilities: ['can_write_text', 'can_run_code'] }, 'coder')
  w.track(startAnnouncer(e.ctx))
  w.track(startExecutor(e.ctx, e.llm))
  const node = nodes[0]!
  await waitUntil('the result', () => user.state.resultsFor(node.node_id).length === 1, 30_000)
  const r = user.state.resultsFor(node.node_id)[0]!
  assert.equal(r.success, true, r.output)
  assert.match(r.output, /^\*\*Ran in a sandbox:\*\* node, exit code 0, \d+ ms/)
  assert.match(r.output, /### Program\n```+js\nconst task = "Count the words of the trip title"\n/)
  // The figures the program computes, worked out here independently: its stdout proves it ran.
  let sum = 7
  for (const ch of 'Count the words of the trip title') sum = (sum * 31 + ch.codePointAt(0)!) % 1000003
  assert.ok(r.output.includes('### stdout\n```\n[demo output] Synthetic program from the offline demo model; no LLM was called.\n' +
    `Task: Count the words of the trip title\nWords: 7, longest: Count\nChecksum: ${sum}\n\`\`\`\n`), r.output)
  assert.match(r.output, /### stderr\n_\(empty\)_/)
  // The goal's synthesis follows the leaf (DESIGN R12); the leaf itself took one call.
  const reqs = w.standin.requests.filter((q) => q.purpose !== 'synthesize')
  assert.equal(reqs.length, 1)
  assert.equal(reqs[0]!.schemaName, PROGRAM_SCHEMA_NAME)
  assert.match(reqs[0]!.prompt, /^Task: Count the words of the trip title/)
  assert.match(reqs[0]!.prompt, /Check what a sandboxed program can reach/)
})

test('without bubblewrap can_run_code is not offered: not announced, not claimed, the reason names the tool and its install', async (t) => {
  const w = await World.create()
  const empty = mkdtempSync(path.join(tmpdir(), 'gs-nobwrap-'))
  t.after(async () => { await w.close(); rmSync(empty, { recursive: true, force: true }) })
  const none = detectSandbox({ envPath: empty })
  assert.equal(none.available, false)
  assert.match(none.available ? '' : none.reason, /bubblewrap \(bwrap\) is not installed; install it with `apt-get install bubblewrap`/)
  const { user, nodes } = await seedCodeLeaves(w, ['Benchmark three JSON parsers'])
  w.standin.respondWith(demoResponder)
  const e = await w.agent('executor', { capabilities: ['can_write_text', 'can_run_code'] }, 'coder')
  const role = await startRole(e.ctx, { llm: e.llm, sandbox: none })
  w.track(role)
  await waitUntil('a capability announcement', () => publishedOf(e.peer, 'capability').length > 0, 5000)
  assert.deepEqual(publishedOf(e.peer, 'capability')[0]!.capabilities, ['can_write_text'])
  const warn = e.records.find((r) => r.event === 'capability_not_offered')
  assert.equal(warn?.capability, 'can_run_code')
  assert.equal(warn?.reason, none.available ? '' : none.reason)
  // A capability gap, provably: the executor keeps looking at the leaf for a while and never claims it.
  await waitUntil('several looks at the leaves', () => publishedOf(e.peer, 'capability').length >= 3, 10_000)
  assert.equal(publishedOf(e.peer, 'claim').length, 0)
  assert.equal(user.state.resultsFor(nodes[0]!.node_id).length, 0)
  assert.equal(w.standin.requests.length, 0, 'no model call, no code run')
})
