/**
 * The dashboard without a swarm: the snapshot of a known plan (the pure tree, progress, peers,
 * no result texts), the HTTP server's answers (page, state, results, 4xx, Server-Sent Events,
 * close), the message-flow log with drops, and the CLI flags and start line.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { connect } from 'node:net'
import path from 'node:path'
import { describe, test } from 'node:test'
import { pino } from 'pino'
import { parseCli } from '../../src/peer/cli'
import { makeConfig } from '../support/peerConfig'
import { FlowLog, type FlowEvent } from '../../src/peer/dashboard/flow'
import { hostAllowed, MAX_EVENT_CLIENTS, startDashboard } from '../../src/peer/dashboard/server'
import { dashboardSnapshot, findTask, GONE_LISTED_MS, peerLabeler, snapshotKey, type DashLeaf, type DashNode, type DashSnapshot } from '../../src/peer/dashboard/snapshot'
import { shownStrings } from '../../src/plan/protocol/text'
import { planTimeline } from '../../src/plan/read/timeline'
import { timelineChartOption, timelineChartSize } from '../../src/plan/read/timelineChart'
import { DropCounters } from '../../src/peer/net/checks/drops'
import type { AnyEnvelope } from '../../src/plan/protocol/schemas'
import { costSummary } from '../../src/plan/read/planCost'
import { STATUS_WORDS, statusWord } from '../../src/plan/read/statusWords'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree } from '../../src/plan/read/tree'
import { swarmRules } from '../../src/plan/rules/swarmRules'
import { startLines } from '../../src/peer/startLines'
import { accepted, acceptedEnvelopes, cancel, capability, envelopeOf, proposal, rootGoal, score, sec, steer, T0 } from '../support/fixtures'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import type { Goal } from '../../src/plan/protocol/schemas'
import { REPO_ROOT } from '../support/peers'
import { SYNTHETIC_ACCEPTANCE, syntheticPlan } from '../support/syntheticPlan'
import { waitUntil } from '../support/wait'

const PEER = 'peer-exec-1'
const NOW = T0 + sec(30)
const silent = pino({ level: 'silent' })
const PAGE_DIR = path.join(REPO_ROOT, 'src', 'peer', 'dashboard', 'page')
/** The chart library the dashboard serves (esbuild.mjs copies it into dist/echarts/). */
const ECHARTS_FILE = path.join(REPO_ROOT, 'node_modules', 'echarts', 'dist', 'echarts.min.js')
/** The rules the dashboard's peer runs with: the synthetic plan's acceptance, the 10 s heartbeat. */
const RULES = swarmRules({ acceptance: SYNTHETIC_ACCEPTANCE, heartbeatMs: 10_000 })

function planState (): PlanState {
  // The synthetic plan's splits are confirmed by one scorer: proven under its quorum of 1 (RULES).
  return new PlanState(syntheticPlan(PEER, { text: 'Plan a <b>trip</b>', shape: [2, 2], nowUs: NOW - sec(5) }).map((i) => envelopeOf(i.kind, i.body as never, PEER) as AnyEnvelope))
}

function snap (state: PlanState, flow: FlowEvent[] = []): DashSnapshot {
  return dashboardSnapshot({
    state, nowUs: NOW, rules: RULES,
    self: { peer_id: 'peer-obs', role: 'observer', swarm: 'default' },
    booted_at_ms: 1, connected_peers: 3, drops: { invalid_schema: 2 }, flow
  })
}

function leaves (n: DashNode): DashLeaf[] {
  return n.kind === 'leaf' ? [n] : n.children.flatMap(leaves)
}

describe('dashboard snapshot', () => {
  test('the plan tree of buildTree with progress, peers and no result text', () => {
    const state = planState()
    const s = snap(state)
    assert.equal(s.plans.length, 1)
    const plan = s.plans[0]!
    assert.equal(plan.text, 'Plan a <b>trip</b>')
    assert.equal(plan.root.status, 'decomposed')
    assert.equal(plan.root.status_word, statusWord('decomposed'), 'the page shows the word the snapshot carries')
    assert.equal(plan.state_word, null, 'a running plan has no stop word')
    assert.equal(plan.progress_text, '4/4 done · 0/3 synthesized')
    // Every leaf is done; the goals' syntheses have no result in this state, so the plan is not complete yet.
    assert.deepEqual({ leaves: plan.progress.leaves, done: plan.progress.done, syntheses: plan.progress.syntheses, complete: plan.progress.complete }, { leaves: 4, done: 4, syntheses: 3, complete: false })
    const ls = leaves(plan.root)
    assert.equal(ls.length, 4)
    for (const l of ls) {
      assert.equal(l.status, 'done')
      assert.equal(l.status_word, statusWord('done'))
      assert.equal(l.has_result, true)
      assert.equal(l.executor, PEER, 'a peer without an announced name shows as its PeerId (short ids whole)')
      assert.ok((l.output_chars ?? 0) > 0)
    }
    const outputs = state.envelopes().flatMap((e) => (e.kind === 'result' ? [e.body.output] : []))
    assert.ok(outputs.length === 4 && outputs.every((o) => o.length > 0 && !JSON.stringify(s).includes(JSON.stringify(o).slice(1, -1))), 'no result text in the snapshot')
    assert.deepEqual(s.peers.map((p) => [p.peer_id, p.role, p.live]), [[PEER, 'executor', true]])
    assert.deepEqual(s.drops, { invalid_schema: 2 })
    assert.equal(s.connected_peers, 3)
  })

  test('the page gets every status word from the snapshot: a goal still splitting, a cancelled plan, the flow\'s peer labels', () => {
    const g = rootGoal('Learn Go')
    const fresh = snap(new PlanState([envelopeOf('goal', g)])).plans[0]!
    assert.deepEqual([fresh.root.status, fresh.root.status_word, fresh.state_word], ['pending_decomposition', statusWord('pending_decomposition'), null])
    assert.equal(fresh.progress_text, `0/0 done · 1 goal ${statusWord('pending_decomposition')}`)
    const stopped = snap(new PlanState([envelopeOf('goal', g), envelopeOf('cancel', cancel(g, { at: T0 + sec(2) }))])).plans[0]!
    assert.deepEqual([stopped.state, stopped.state_word, stopped.root.status_word], ['cancelled', statusWord('cancelled'), statusWord('cancelled')])
    const long = '12D3KooWAbCdEfGhIjKlMnOpQrStUvWxYz'
    const s = snap(new PlanState([envelopeOf('capability', { ...capability(PEER, NOW - sec(1)), name: 'executor-1' })]), [
      { seq: 1, at_ms: 1, type: 'message', kind: 'result', from: PEER, source: null },
      { seq: 2, at_ms: 2, type: 'drop', kind: 'invalid_schema', from: long, source: 'gossip' },
      { seq: 3, at_ms: 3, type: 'drop', kind: 'invalid_schema', from: null, source: 'disk' }
    ])
    assert.deepEqual(s.flow.map((f) => f.from_label), ['executor-1', `…${long.slice(-8)}`, null], 'an announced name, else the PeerId suffix the trees show')
  })

  test('each plan\'s timeline: the chart option of planTimeline with the peers as the page labels them, its strings escaped', () => {
    const state = planState()
    const s = snap(state)
    const t = planTimeline(state, RULES, s.plans[0]!.id, NOW)
    assert.ok(t !== null)
    assert.deepEqual(s.timelines, [{
      plan_id: s.plans[0]!.id,
      option: shownStrings(timelineChartOption(t, peerLabeler(state))),
      height: timelineChartSize(t).height,
      bars: t.bars.length,
      critical: t.critical_path.length,
      running: t.bars.some((b) => b.running)
    }])
    assert.ok(t.bars.filter((b) => b.kind === 'execute').length >= 4, 'a bar of model work per leaf')
  })

  test('the page holds no status words and cuts no text of its own', () => {
    const page = readFileSync(path.join(PAGE_DIR, 'dashboard.js'), 'utf8')
    for (const [status, word] of Object.entries(STATUS_WORDS)) {
      for (const literal of [status, word]) assert.doesNotMatch(page, new RegExp(`['"\`]${literal}['"\`]`), `the page spells ${literal} itself`)
    }
    assert.doesNotMatch(page, /\.(slice|substring|substr)\(/, 'no cutting')
  })
})

describe('dashboard snapshot: peers', () => {
  test('liveness follows each announcement\'s heartbeat, the dashboard\'s own peer is live, long-gone peers leave the list', () => {
    const obsHeartbeat = 120_000
    const state = new PlanState([
      // An observer on its slow heartbeat, last heard 40 s ago: live for three of its heartbeats.
      envelopeOf('capability', { ...capability('peer-obs-2', NOW - sec(40), [], 'observer'), heartbeat_ms: obsHeartbeat }),
      // The dashboard's own peer, whose last announcement is older than any TTL.
      envelopeOf('capability', { ...capability('peer-obs', NOW - sec(3600), [], 'observer'), heartbeat_ms: obsHeartbeat }),
      // An executor on the 10 s heartbeat heard 45 s ago: gone, still listed.
      envelopeOf('capability', { ...capability('peer-ex-gone', NOW - sec(45)), heartbeat_ms: 10_000 }),
      // An executor last heard an hour ago: gone for longer than GONE_LISTED_MS, not listed.
      envelopeOf('capability', { ...capability('peer-ex-old', NOW - sec(3600)), heartbeat_ms: 10_000 })
    ])
    const s = snap(state)
    assert.deepEqual(s.peers.map((p) => [p.peer_id, p.live]), [['peer-ex-gone', false], ['peer-obs', true], ['peer-obs-2', true]])
    assert.equal(s.peers.find((p) => p.peer_id === 'peer-obs-2')?.age_ms, 40_000)
    assert.ok(GONE_LISTED_MS < 3600_000 - 30_000)
  })

  test('snapshotKey leaves the clock out: a later snapshot of the same state has the same key, a new announcement changes it', () => {
    const at = (us: number, announced: number): DashSnapshot => dashboardSnapshot({
      state: new PlanState([envelopeOf('capability', capability('peer-ex-1', announced))]),
      nowUs: us, rules: RULES,
      self: { peer_id: 'peer-obs', role: 'observer', swarm: 'default' },
      booted_at_ms: 1, connected_peers: 1, drops: {}, flow: []
    })
    assert.equal(snapshotKey(at(NOW, NOW - sec(5))), snapshotKey(at(NOW + sec(3), NOW - sec(5))))
    assert.notEqual(snapshotKey(at(NOW, NOW - sec(5))), snapshotKey(at(NOW + sec(3), NOW + sec(2))))
    // Liveness lapsing is a change too.
    assert.notEqual(snapshotKey(at(NOW, NOW - sec(5))), snapshotKey(at(NOW + sec(60), NOW - sec(5))))
  })
})

describe('dashboard snapshot: final answer and cost', () => {
  test('each plan carries its final answer task (no text) and its cost; findTask finds leaves and the answer', () => {
    const state = planState()
    const [root] = buildTree(state, { nowUs: NOW, rules: RULES })
    assert.ok(root?.synthesis !== null && root?.synthesis !== undefined && root.plan !== undefined)
    const plan = snap(state).plans[0]!
    assert.deepEqual(plan.answer, {
      kind: 'answer', id: root.synthesis.id, text: root.text, status: root.synthesis.status, status_word: statusWord(root.synthesis.status), capability: 'can_write_text',
      claimer: null, executor: null, has_result: false, success: null, output_chars: null, model_wait: null, wait: null
    })
    const { money, tables, ...cost } = plan.cost!
    assert.deepEqual(cost, { summary: costSummary(root.plan), stop: null, spend: root.plan.spend, budget: null })
    // Money and its tables (DESIGN R13 "Money"): this plan spent nothing.
    assert.equal(money, '$0.00')
    assert.deepEqual(tables.by_role.map((r) => [r.label, r.calls, r.money]), [['decomposer', 0, '$0.00'], ['scorer', 0, '$0.00'], ['executor', 0, '$0.00'], ['total', 0, '$0.00']])
    assert.deepEqual([tables.by_goal[0]?.id, tables.by_goal[0]?.depth, tables.by_goal.slice(1).every((r) => r.depth === 1)], [root.id, 0, true])
    assert.equal(findTask([root], root.synthesis.id), root.synthesis)
    const leaf = leaves(plan.root)[0]!
    assert.equal(findTask([root], leaf.id)?.id, leaf.id)
    assert.equal(findTask([root], '0123456789abcdef'), undefined)
  })
})

describe('dashboard snapshot: review and steers (DESIGN R14)', () => {
  const root: Goal = { ...rootGoal('Plan a trip', 'peer-user', T0), review: { depth: 1 } }
  const pA = proposal(root.goal_id, ['Book flights', 'Book <i>hotels</i>'], 'peer-dec-1', { at: T0 + sec(1) })
  const pB = proposal(root.goal_id, ['Research', 'Write it up'], 'peer-dec-2', { at: T0 + sec(1) })
  const pC = proposal(root.goal_id, ['Ask a friend'], 'peer-dec-2', { at: T0 + sec(1) })
  const held = (): AnyEnvelope[] => [
    envelopeOf('goal', root),
    envelopeOf('capability', { ...capability('peer-user', T0 + sec(20), [], 'observer'), name: 'alice' }),
    envelopeOf('capability', { ...capability('peer-dec-1', T0 + sec(20), [], 'decomposer'), name: 'dec-one' }),
    envelopeOf('capability', capability('peer-sc-1', T0 + sec(20), [], 'scorer')),
    envelopeOf('proposal', pA), envelopeOf('proposal', pB), envelopeOf('proposal', pC),
    envelopeOf('score', score(pA, 'peer-sc-1', 0.8, { notes: 'covers it' })),
    // Held out of order: the list is by issued_at.
    envelopeOf('steer', steer(root, 'reject', pC.proposal_id, { at: T0 + sec(9), note: 'too thin \u202e<b>' }), 'peer-user'),
    envelopeOf('steer', steer(root, 'reject', pB.proposal_id, { at: T0 + sec(4), note: '' }), 'peer-user'),
    // Not the origin's: never shown (the rules ignore it).
    envelopeOf('steer', steer(root, 'approve', pA.proposal_id, { at: T0 + sec(5), origin: 'peer-evil' }), 'peer-evil')
  ]
  const shot = (state: PlanState): DashSnapshot => dashboardSnapshot({
    state, nowUs: T0 + sec(21), rules: DEFAULT_RULES,
    self: { peer_id: 'peer-user', role: 'observer', swarm: 'default' },
    booted_at_ms: 1, connected_peers: 3, drops: {}, flow: []
  })

  test('the proposals waiting come from the goal\'s wait; each counted steer with its target\'s text, who and when, oldest first', () => {
    const state = new PlanState(held())
    const plan = shot(state).plans[0]!
    const tree = buildTree(state, { nowUs: T0 + sec(21), rules: DEFAULT_RULES })[0]!
    assert.equal(tree.wait?.on, 'review')
    assert.deepEqual(plan.reviews, [{
      goal_id: root.goal_id,
      goal_text: 'Plan a trip',
      depth: 0,
      proposals: [{ proposal_id: pA.proposal_id, proposer: 'dec-one', mean: 0.8, voters: 1, subgoals: ['Book flights', 'Book <i>hotels</i>'], notes: ['covers it'] }]
    }])
    assert.deepEqual(plan.steers.map((s) => ({ ...s, at: s.at.length })), [
      { action: 'reject', target: pB.proposal_id, target_text: 'Plan a trip', round: 0, note: '', by: 'alice', at_ms: (T0 + sec(4)) / 1000, at: 8 },
      { action: 'reject', target: pC.proposal_id, target_text: 'Plan a trip', round: 0, note: 'too thin \\u202e<b>', by: 'alice', at_ms: (T0 + sec(9)) / 1000, at: 8 }
    ], 'the bidi control is escaped, the markup stays text for the page')
    assert.match(plan.steers[0]!.at, /^\d\d:\d\d:\d\d$/)
  })

  test('an approval ends the wait and joins the list; a plan without steers or review has neither', () => {
    const a = accepted(pA, { atomic: [true, true], confirming: [{ scorer_peer: 'peer-sc-1', score: 0.8 }], at: T0 + sec(12) })
    const state = new PlanState([...held(), envelopeOf('steer', steer(root, 'approve', pA.proposal_id, { at: T0 + sec(11) }), 'peer-user'), ...acceptedEnvelopes(a)])
    const plan = shot(state).plans[0]!
    assert.deepEqual(plan.reviews, [])
    assert.deepEqual(plan.steers.map((s) => [s.action, s.target]), [['reject', pB.proposal_id], ['reject', pC.proposal_id], ['approve', pA.proposal_id]])
    const plain = snap(planState()).plans[0]!
    assert.deepEqual([plain.reviews, plain.steers], [[], []])
  })

  test('the page shows reviews and steers as text nodes only', () => {
    const js = readFileSync(path.join(PAGE_DIR, 'dashboard.js'), 'utf8')
    assert.match(js, /function reviewBlock/)
    assert.match(js, /function steerBlock/)
    assert.doesNotMatch(js, /innerHTML|outerHTML|insertAdjacentHTML/)
  })
})

describe('dashboard server', () => {
  test('page, state, results, 4xx for bad requests, live events, and close ends the streams', async () => {
    const state = planState()
    let changed: (() => void) | null = null
    let dropped = 2
    let snapshots = 0
    const srv = await startDashboard({
      snapshot: () => { snapshots++; return { ...snap(state), drops: { invalid_schema: dropped } } },
      output: async (id) => {
        const r = state.envelopes().find((e) => e.kind === 'result' && e.body.node_id === id)
        return r?.kind === 'result' ? r.body.output : null
      },
      onChange: (fn) => { changed = fn; return { dispose: () => { changed = null } } }
    }, { host: '127.0.0.1', port: 0, pageDir: PAGE_DIR, echartsFile: ECHARTS_FILE, log: silent, throttleMs: 10, tickMs: 60_000 })
    try {
      assert.equal(srv.url, `http://127.0.0.1:${srv.port}/`)
      const page = await fetch(srv.url)
      assert.equal(page.status, 200)
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/)
      assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/)
      assert.match(await page.text(), /<script src="dashboard.js" defer><\/script>/)
      assert.equal((await fetch(`${srv.url}dashboard.js`)).headers.get('content-type'), 'text/javascript; charset=utf-8')
      const chartLib = await fetch(`${srv.url}echarts.min.js`)
      assert.equal(chartLib.headers.get('content-type'), 'text/javascript; charset=utf-8', 'the timeline\'s chart library comes from the peer itself')
      assert.equal(await chartLib.text(), readFileSync(ECHARTS_FILE, 'utf8'))
      const st = await (await fetch(`${srv.url}api/state`)).json() as DashSnapshot
      assert.equal(st.plans[0]?.progress.done, 4)

      const leaf = leaves(st.plans[0]!.root)[0]!
      const res = await fetch(`${srv.url}api/result/${leaf.id}`)
      assert.equal(res.status, 200)
      const want = state.envelopes().find((e) => e.kind === 'result' && e.body.node_id === leaf.id)
      assert.equal(await res.text(), want?.kind === 'result' ? want.body.output : '?')
      assert.equal((await fetch(`${srv.url}api/result/NOT-HEX`)).status, 400)
      assert.equal((await fetch(`${srv.url}api/result/0123456789abcdef`)).status, 404)
      assert.equal((await fetch(`${srv.url}api/nothing`)).status, 404)
      const post = await fetch(`${srv.url}api/state`, { method: 'POST', body: '{}' })
      assert.equal(post.status, 405)
      assert.equal(post.headers.get('allow'), 'GET, HEAD')
      // A request line that is not HTTP gets a 400, and the server keeps serving.
      const raw = await new Promise<string>((resolve, reject) => {
        const sock = connect(srv.port, '127.0.0.1', () => { sock.write('NOT HTTP AT ALL\r\n\r\n') })
        let got = ''
        sock.on('data', (d) => { got += d.toString() })
        sock.on('end', () => { resolve(got) })
        sock.on('error', reject)
      })
      assert.match(raw, /^HTTP\/1\.1 400/)
      assert.equal((await fetch(`${srv.url}api/state`)).status, 200)

      // Events: the state at once, another on a change (none while what it shows is the
      // same), and the stream ends on close.
      const ev = await fetch(`${srv.url}api/events`)
      assert.match(ev.headers.get('content-type') ?? '', /^text\/event-stream/)
      assert.equal(ev.headers.get('cache-control'), 'no-store, no-transform', 'a compressing proxy leaves the stream alone')
      const reader = ev.body!.getReader()
      const decoder = new TextDecoder()
      let text = ''
      const readUntil = async (count: number): Promise<void> => {
        while ((text.match(/^event: state$/gm) ?? []).length < count) {
          const { value, done } = await reader.read()
          if (done) throw new Error(`stream ended after: ${text.slice(0, 200)}`)
          text += decoder.decode(value, { stream: true })
        }
      }
      await readUntil(1)
      assert.match(text, /^retry: 1000$/m)
      assert.ok(changed !== null)
      const change = changed as () => void
      change() // the first push may repeat what the stream opened with
      await readUntil(2)
      const taken = snapshots
      change() // nothing changed: nothing is sent
      await waitUntil('the unchanged snapshot was taken', () => snapshots > taken, 5000)
      dropped = 3
      change()
      await readUntil(3)
      const data = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as DashSnapshot)
      assert.deepEqual(data.map((d) => d.drops.invalid_schema), [2, 2, 3], 'the unchanged snapshot was not sent again')
      assert.equal(data[2]?.plans[0]?.id, st.plans[0]?.id)
      const closing = srv.close()
      for (;;) { const { done } = await reader.read(); if (done) break }
      await closing
      await assert.rejects(fetch(srv.url))
    } finally {
      await srv.close()
    }
  })

  test('a request whose Host is not the dashboard\'s own name gets 421 on every path (DNS rebinding); loopback names and the listen address are served', async () => {
    const srv = await startDashboard({ snapshot: () => snap(planState()), output: async () => 'the result', onChange: () => ({ dispose () {} }) }, { host: '127.0.0.1', port: 0, pageDir: PAGE_DIR, echartsFile: ECHARTS_FILE, log: silent })
    /** One GET with exactly this Host header (none when undefined). */
    const get = async (host: string | undefined, p: string): Promise<{ status: number, body: string }> => await new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: srv.port, path: p, setHost: false, headers: host === undefined ? {} : { host } }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (d: string) => { body += d; if (res.headers['content-type']?.startsWith('text/event-stream') === true) res.destroy() })
        res.on('close', () => { resolve({ status: res.statusCode ?? 0, body }) })
      })
      req.on('error', reject)
      req.end()
    })
    try {
      const port = srv.port
      for (const host of [`evil.example:${port}`, 'evil.example', `127.0.0.1.evil.example:${port}`, `localhost.evil.example:${port}`, `evil@127.0.0.1:${port}`, `[::2]:${port}`, `192.168.1.20:${port}`, '', undefined]) {
        for (const p of ['/', '/dashboard.js', '/api/state', '/api/events', '/api/result/0123456789abcdef']) {
          const r = await get(host, p)
          // Node's HTTP server itself answers 400 to an HTTP/1.1 request without a Host header.
          assert.equal(r.status, host === undefined ? 400 : 421, `${String(host)} ${p}`)
          assert.doesNotMatch(r.body, /"plans"|the result/, 'nothing of the plan is sent')
        }
      }
      assert.match((await get(`evil.example:${port}`, '/api/state')).body, /answers only to 127\.0\.0\.1, localhost, \[::1\] or its listen address 127\.0\.0\.1/)
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, '127.0.0.1']) {
        const r = await get(host, '/api/state')
        assert.equal(r.status, 200, host)
        assert.match(r.body, /"plans"/)
      }
    } finally {
      await srv.close()
    }
    // The rule by the listen address: its own name, and any IP literal when bound to every interface.
    assert.equal(hostAllowed('192.168.1.20:8080', '192.168.1.20'), true)
    assert.equal(hostAllowed('10.0.0.1:8080', '192.168.1.20'), false)
    assert.equal(hostAllowed('[fe80::1]:8080', 'fe80::1'), true)
    assert.equal(hostAllowed('192.168.1.20:8080', '0.0.0.0'), true)
    assert.equal(hostAllowed('[fe80::1]:8080', '::'), true)
    assert.equal(hostAllowed('nas.local:8080', '0.0.0.0'), false)
    assert.equal(hostAllowed('localhost:8080', '0.0.0.0'), true)
  })

  test('live events: at most MAX_EVENT_CLIENTS streams at once, the next gets 503 with Retry-After', async () => {
    const srv = await startDashboard({ snapshot: () => snap(new PlanState()), output: async () => null, onChange: () => ({ dispose () {} }) }, { host: '127.0.0.1', port: 0, pageDir: PAGE_DIR, echartsFile: ECHARTS_FILE, log: silent })
    const open: AbortController[] = []
    try {
      for (let i = 0; i < MAX_EVENT_CLIENTS; i++) {
        const ac = new AbortController()
        open.push(ac)
        assert.equal((await fetch(`${srv.url}api/events`, { signal: ac.signal })).status, 200)
      }
      const over = await fetch(`${srv.url}api/events`)
      assert.equal(over.status, 503)
      assert.equal(over.headers.get('retry-after'), '5')
      assert.equal((await fetch(`${srv.url}api/state`)).status, 200, 'the rest of the page keeps working')
    } finally {
      for (const ac of open) ac.abort()
      await srv.close()
    }
  })

  test('a missing page file, a missing chart library or a taken port is an error naming it', async () => {
    await assert.rejects(startDashboard({ snapshot: () => snap(new PlanState()), output: async () => null, onChange: () => ({ dispose () {} }) },
      { host: '127.0.0.1', port: 0, pageDir: path.join(REPO_ROOT, 'no-such-dir'), echartsFile: ECHARTS_FILE, log: silent }), /index\.html is missing from .*no-such-dir/)
    await assert.rejects(startDashboard({ snapshot: () => snap(new PlanState()), output: async () => null, onChange: () => ({ dispose () {} }) },
      { host: '127.0.0.1', port: 0, pageDir: PAGE_DIR, echartsFile: path.join(REPO_ROOT, 'no-such-dir', 'echarts.min.js'), log: silent }), /chart library is missing \(.*no-such-dir/)
    const a = await startDashboard({ snapshot: () => snap(new PlanState()), output: async () => null, onChange: () => ({ dispose () {} }) }, { host: '127.0.0.1', port: 0, pageDir: PAGE_DIR, echartsFile: ECHARTS_FILE, log: silent })
    try {
      await assert.rejects(startDashboard({ snapshot: () => snap(new PlanState()), output: async () => null, onChange: () => ({ dispose () {} }) },
        { host: '127.0.0.1', port: a.port, pageDir: PAGE_DIR, echartsFile: ECHARTS_FILE, log: silent }), (err: NodeJS.ErrnoException) => err.code === 'EADDRINUSE')
    } finally { await a.close() }
  })
})

describe('dashboard message flow', () => {
  test('messages by author and kind, drops with reason and source, duplicates left out, newest kept', () => {
    const listeners = new Set<(env: AnyEnvelope) => void>()
    const bus = { onMessage: (fn: (env: AnyEnvelope) => void) => { listeners.add(fn); return { dispose: () => { listeners.delete(fn) } } } }
    const drops = new DropCounters(silent)
    const flow = new FlowLog(bus, drops, 3)
    let changes = 0
    flow.onChange(() => { changes++ })
    const items = syntheticPlan(PEER, { text: 'x', shape: [2], nowUs: NOW })
    for (const l of listeners) l(envelopeOf(items[1]!.kind, items[1]!.body as never, PEER) as AnyEnvelope)
    drops.count('invalid_schema', 'bad', 'gossip', 'peer-evil')
    drops.count('duplicate', 'k', 'sync')
    assert.deepEqual(flow.recent().map((e) => [e.type, e.kind, e.from, e.source]), [['message', 'goal', PEER, null], ['drop', 'invalid_schema', 'peer-evil', 'gossip']])
    assert.equal(changes, 2)
    drops.count('clock_skew', 'late', 'gossip')
    drops.count('too_large', 'big', 'push')
    assert.deepEqual(flow.recent().map((e) => e.kind), ['invalid_schema', 'clock_skew', 'too_large'])
    assert.deepEqual(flow.recent().map((e) => e.seq), [2, 3, 4])
    assert.equal(drops.snapshot().duplicate, 1, 'duplicates are still counted')
    flow.dispose()
    drops.count('clock_skew', 'late', 'gossip')
    assert.equal(flow.recent().length, 3)
    assert.equal(listeners.size, 0)
  })
})

describe('dashboard flags and start line', () => {
  const io = (): { err: string[], io: { out: (s: string) => void, err: (s: string) => void, env: NodeJS.ProcessEnv } } => {
    const err: string[] = []
    return { err, io: { out: () => {}, err: (s) => { err.push(s) }, env: {} } }
  }
  test('--dashboard-port (loopback unless --dashboard-host), bad values exit 2 naming the flag', () => {
    const a = parseCli(['--role', 'observer', '--dashboard-port', '0'], io().io)
    assert.ok(a.kind === 'run')
    assert.deepEqual(a.config.dashboard, { host: '127.0.0.1', port: 0 })
    const b = parseCli(['--role', 'observer', '--dashboard-port', '8080', '--dashboard-host', '::1'], io().io)
    assert.ok(b.kind === 'run')
    assert.deepEqual(b.config.dashboard, { host: '::1', port: 8080 })
    const c = parseCli(['--role', 'observer'], io().io)
    assert.ok(c.kind === 'run')
    assert.equal(c.config.dashboard, undefined)
    for (const [argv, flag] of [[['--dashboard-port', '70000'], '--dashboard-port'], [['--dashboard-port', 'x'], '--dashboard-port'],
      [['--dashboard-host', '127.0.0.1'], '--dashboard-host'], [['--dashboard-port', '1', '--dashboard-host', 'localhost'], '--dashboard-host']] as const) {
      const r = io()
      assert.deepEqual(parseCli(['--role', 'observer', ...argv], r.io), { kind: 'exit', code: 2 }, argv.join(' '))
      assert.match(r.err.join(''), new RegExp(flag), argv.join(' '))
    }
  })

  test('the start lines give the dashboard URL after the address when there is one', () => {
    const c = makeConfig('observer', { name: 'observer-4001', displayName: 'observer-4001' })
    const lines = startLines(c, 'P', ['/ip4/127.0.0.1/tcp/4001/p2p/P'], 'http://127.0.0.1:8080/')
    assert.equal(lines.length, 5)
    assert.equal(lines[3], 'dashboard: http://127.0.0.1:8080/')
    assert.equal(startLines(c, 'P', ['/ip4/127.0.0.1/tcp/4001/p2p/P']).length, 4)
  })
})
