/**
 * OpenTelemetry traces from every peer (DESIGN "Tracing"), on real peer processes with the LLM
 * stand-in and a loopback OTLP/HTTP receiver: one plan is one trace whose id every peer derives
 * from the root goal id, every span hangs under the origin's `invoke_workflow` root span, the model
 * spans carry what the model server reported, and no span carries swarm text by default. Off
 * unless asked: a plan run without an endpoint sends nothing. And a collector that never answers
 * costs the plan nothing: it completes, each peer says so once, and memory stays bounded.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { OtlpReceiver, SilentCollector, stringsOf, type ReceivedSpan } from '../support/otlpReceiver'
import type { LlmStandin } from '../support/llm-standin'
import { TestSwarm, type TestPeer } from '../support/peers'
import { planTraceId, rootSpanId } from '../../src/peer/trace/ids'
import { roleArgs, startStandin, waitComplete } from './roles-support'

const GOAL = 'Plan a two-week trip to Japan'
/** Unset for every peer, whatever the test runner's environment says: tracing only where a test asks for it. */
const NO_OTEL_ENV = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' }
/** The spans a plan with a split, two leaves and a final answer must give. */
const EXPECTED = ['invoke_workflow', 'decompose', 'score', 'accept', 'claim', 'execute', 'synthesis', 'chat standin']

/** A whole plan: an observer that submits (the origin), a decomposer, two scorers, an executor; `args` for each. */
async function runPlan (swarm: TestSwarm, standin: LlmStandin, extra: string[]): Promise<{ peers: TestPeer[], observer: TestPeer, goalId: string }> {
  const args = [...roleArgs(standin, { maxDepth: 1, rootSplitCount: 2 }), ...extra]
  const observer = await swarm.start({ role: 'observer', name: 'observer', args, env: NO_OTEL_ENV })
  const peers = [observer]
  for (const [role, name] of [['decomposer', 'dec'], ['scorer', 'sc1'], ['scorer', 'sc2'], ['executor', 'ex']] as const) {
    peers.push(await swarm.start({ role, name, args, env: NO_OTEL_ENV }))
  }
  // Every role announced before the goal: the plan does not wait on liveness.
  await observer.waitFor(() => new Set([...observer.envelopes.values()].flatMap((e) => (e.kind === 'capability' ? [e.body.peer_id] : []))).size >= 5, 'every peer announced', 20_000)
  const goalId = await observer.submitGoal(GOAL)
  const p = await waitComplete(observer, goalId, 90_000)
  assert.equal(p.done, p.leaves, 'every leaf done')
  return { peers, observer, goalId }
}

/** The spans whose parent chain does not reach `rootId` among `spans` (a parent missing, or a chain ending elsewhere). */
function orphans (spans: ReceivedSpan[], rootId: string): ReceivedSpan[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  return spans.filter((s) => {
    let cur: ReceivedSpan | undefined = s
    for (let i = 0; i < 20 && cur !== undefined; i++) {
      if (cur.spanId === rootId || cur.parentSpanId === rootId) return false
      cur = byId.get(cur.parentSpanId)
    }
    return true
  })
}

/** RSS of each role's peer after a plan, KiB, by peer name. */
type Rss = Map<string, number>

describe('tracing', () => {
  let standin: LlmStandin
  /** The untraced run's RSS, for the never-answering collector's comparison. */
  let untracedRss: Rss | null = null
  before(async () => { standin = await startStandin() })
  after(async () => { await standin.close() })

  it('one trace per plan across every peer: derived ids, the origin\'s root span over all, GenAI model spans with the stand-in\'s figures, no swarm text', async (t) => {
    const otlp = await OtlpReceiver.start()
    const swarm = new TestSwarm()
    t.after(async () => { await swarm.close(); await otlp.close() })
    const { peers, observer, goalId } = await runPlan(swarm, standin, ['--otlp-endpoint', otlp.baseUrl])
    const traceId = planTraceId(goalId)
    const rootId = rootSpanId(goalId)
    const plan = (): ReceivedSpan[] => otlp.spans.filter((s) => s.traceId === traceId)
    await otlp.waitFor(() => EXPECTED.every((n) => plan().some((s) => s.name === n)) && orphans(plan(), rootId).length === 0,
      `the spans ${EXPECTED.join(', ')}, every one reaching the root span`)
    const spans = plan()
    assert.deepEqual(otlp.rejected, [])
    assert.deepEqual(otlp.spans.filter((s) => s.traceId !== traceId).map((s) => s.name), [], 'every span is in the plan\'s trace')

    // The root span: the origin's, with the derived span id, no parent, from the goal's creation to the final answer.
    const roots = spans.filter((s) => s.name === 'invoke_workflow')
    assert.equal(roots.length, 1)
    const root = roots[0]!
    assert.equal(root.spanId, rootId)
    assert.equal(root.parentSpanId, '')
    assert.equal(root.resource['goal_swarm.peer_id'], observer.peerId, 'the origin emits it')
    assert.equal(root.attributes['gen_ai.operation.name'], 'invoke_workflow')
    assert.equal(root.attributes['goal_swarm.plan_state'], 'complete')
    const goal = [...observer.envelopes.values()].find((e) => e.kind === 'goal' && e.body.goal_id === goalId)
    assert.ok(goal?.kind === 'goal')
    assert.ok(Math.abs(root.startMs - Date.parse(goal.body.created_at)) < 1, 'it starts at the goal\'s created_at')
    assert.ok(spans.every((s) => s === root || s.startMs >= root.startMs - 5), 'no span starts before the plan')

    // Every peer's spans are in it, each under its own resource.
    for (const p of peers) assert.ok(spans.some((s) => s.resource['goal_swarm.peer_id'] === p.peerId && s.resource['goal_swarm.role'] === p.role && s.resource['service.name'] === 'goal-swarm-peer'), `spans from ${p.name}`)
    assert.deepEqual(orphans(spans, rootId), [])
    for (const s of spans.filter((x) => x !== root)) {
      if (s.name.startsWith('chat ') || s.name.startsWith('execute_tool ')) continue
      assert.equal(s.attributes['goal_swarm.root_goal_id'], goalId, s.name)
      assert.equal(typeof s.attributes['goal_swarm.goal_id'], 'string', s.name)
      assert.equal(s.attributes['goal_swarm.peer_id'], s.resource['goal_swarm.peer_id'], s.name)
    }
    // One accept span per split, from the scorer the split names first.
    const accepted = [...observer.envelopes.values()].filter((e) => e.kind === 'accepted')
    assert.equal(spans.filter((s) => s.name === 'accept').length, accepted.length)
    for (const s of spans.filter((x) => x.name === 'claim')) assert.equal(typeof s.attributes['goal_swarm.settle_window_ms'], 'number')
    assert.ok(spans.some((s) => s.name === 'claim' && s.attributes['goal_swarm.outcome'] === 'published' && s.events.some((e) => e.name === 'settled')))

    // Model spans: GenAI attributes, the figures the stand-in answered with, under their role's span.
    const chats = spans.filter((s) => s.name === 'chat standin')
    const roles = new Set<string>()
    for (const c of chats) {
      assert.equal(c.kind, 3, 'a chat span is a client span')
      assert.equal(c.attributes['gen_ai.operation.name'], 'chat')
      assert.equal(c.attributes['gen_ai.provider.name'], 'openai')
      assert.equal(c.attributes['gen_ai.request.model'], 'standin')
      const parent = spans.find((s) => s.spanId === c.parentSpanId)
      assert.ok(parent !== undefined && ['decompose', 'score', 'execute', 'synthesis'].includes(parent.name), `a chat span's parent is its role's span, not ${parent?.name}`)
      roles.add(String(c.resource['goal_swarm.role']))
      if (c.attributes['goal_swarm.outcome'] === 'aborted') continue
      const req = standin.requests.find((r) => r.headers['x-client-request-id'] === c.attributes['goal_swarm.llm.request_id'])
      assert.ok(req?.usage != null, `the stand-in answered request ${String(c.attributes['goal_swarm.llm.request_id'])}`)
      assert.equal(c.attributes['gen_ai.usage.input_tokens'], req.usage.input_tokens)
      assert.equal(c.attributes['gen_ai.usage.output_tokens'], req.usage.output_tokens)
      assert.deepEqual(c.attributes['gen_ai.response.finish_reasons'], ['stop'])
    }
    assert.deepEqual([...roles].sort(), ['decomposer', 'executor', 'scorer'])

    // No swarm text by default: neither the goal's, the parts', nor any result's.
    const texts = [GOAL, ...[...observer.envelopes.values()].flatMap((e) => e.kind === 'goal' || e.kind === 'node' ? [e.body.text] : e.kind === 'result' ? [e.body.output] : [])]
    const values = spans.flatMap((s) => [...Object.values(s.attributes), ...Object.values(s.resource), ...s.events.flatMap((e) => Object.values(e.attributes)), s.status.message].flatMap((v) => stringsOf(v)))
    for (const text of texts.filter((x) => x.length >= 12)) {
      // The whole text, or a clipped start of it.
      const held = values.find((v) => v.includes(text) || (v.length >= 20 && text.startsWith(v)))
      assert.equal(held, undefined, `a span attribute holds swarm text: ${JSON.stringify(held)}`)
    }
    for (const key of ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'goal_swarm.goal_text', 'goal_swarm.output']) {
      assert.ok(spans.every((s) => !(key in s.attributes)), `${key} only with --otlp-include-content`)
    }
  })

  it('off by default: a plan run with no endpoint and no OTLP variable sends nothing', async (t) => {
    const otlp = await OtlpReceiver.start()
    const swarm = new TestSwarm()
    t.after(async () => { await swarm.close(); await otlp.close() })
    const { peers } = await runPlan(swarm, standin, [])
    untracedRss = new Map(peers.map((p) => [p.name, p.rssKiB() ?? 0]))
    // A traced peer sends what it holds at the latest when it stops: after a clean stop, nothing
    // can be on its way.
    for (const p of peers) {
      const exit = await p.stop()
      assert.deepEqual(exit, { code: 0, signal: null }, `${p.name} stopped cleanly`)
      assert.ok(!p.logRecords().some((r) => r.event === 'tracing_on'), `${p.name} did not trace`)
    }
    assert.equal(otlp.requests, 0)
  })

  it('a collector that never answers: the plan completes, each peer warns once, memory stays bounded, stop is not held up', async (t) => {
    const silent = await SilentCollector.start()
    const swarm = new TestSwarm()
    t.after(async () => { await swarm.close(); await silent.close() })
    const { peers } = await runPlan(swarm, standin, ['--otlp-endpoint', silent.baseUrl])
    const ex = peers.find((p) => p.name === 'ex')!
    const failed = (p: TestPeer): Record<string, unknown>[] => p.logRecords().filter((r) => r.event === 'trace_export_failed')
    // The executor has spans to send since its first claim; its export gives up after its timeout.
    await ex.waitFor(() => failed(ex).length > 0, 'the executor\'s warning about the collector', 30_000)
    assert.ok(silent.connections > 0, 'the peers did try the collector')
    const rss = new Map(peers.map((p) => [p.name, p.rssKiB() ?? 0]))
    for (const p of peers) {
      const exit = await p.stop()
      assert.deepEqual(exit, { code: 0, signal: null }, `${p.name} stopped by itself within its stop deadline`)
      assert.ok(failed(p).length <= 1, `${p.name} warned ${failed(p).length} times`)
    }
    assert.equal(failed(ex).length, 1)
    assert.match(String(failed(ex)[0]!.msg), /could not send spans to the OTLP collector at http:\/\/127\.0\.0\.1:\d+\/v1\/traces/)
    // The SDK costs a few MiB once loaded; a leak over the plan would show far beyond the margin.
    if (untracedRss !== null) {
      for (const [name, kib] of rss) {
        const base = untracedRss.get(name) ?? 0
        assert.ok(kib < base * 1.5 + 64 * 1024, `${name}: ${Math.round(kib / 1024)} MiB traced vs ${Math.round(base / 1024)} MiB untraced`)
      }
    }
  })
})
