/**
 * Shared parts of the roles' swarm tests (test/swarm/roles-*.test.ts): real peer processes
 * (test/support/peers.ts) whose LLM is the loopback stand-in speaking the OpenAI API to the real
 * openai SDK inside each peer, small trees and short protocol timings, and the plan tree as
 * each peer holds it (rebuilt from the envelopes it streams over IPC).
 */
import { PlanState } from '../../src/plan/state/planState'
import { swarmRules, type SwarmRules } from '../../src/plan/rules/swarmRules'
import { buildTree, planProgress, treeHash, type GoalView, type PlanProgress } from '../../src/plan/read/tree'
import { nowMicros } from '../../src/plan/protocol/time'
import { demoResponder, LlmStandin, proposedSubgoals, scoreReply, type StandinReply, type StandinRequest } from '../support/llm-standin'
import type { TestPeer, TestSwarm } from '../support/peers'
import { waitUntil } from '../support/wait'

/**
 * Settle window floor of these tests (ms): the protocol default. The window adapts upwards to
 * measured claim delivery and event-loop lag, and the call runs meanwhile.
 */
export const SETTLE_MS = 250
/** Claim lease (ms): short, so a killed holder's leaf comes back quickly. */
export const LEASE_MS = 4000
/** Acceptance timeout of roleArgs (ms): a fallback split comes this long after its goal began. */
export const ACCEPT_TIMEOUT_MS = 5000

/** Protocol flags for every role peer: small splits, short timings, fast LLM retries. */
export function roleArgs (standin: LlmStandin, over: { maxDepth?: number, minSplits?: number, maxSplits?: number, rootSplitCount?: number } = {}): string[] {
  const args = [
    '--llm', 'openai-compatible', '--model', 'standin', '--llm-base-url', standin.openaiBaseUrl,
    '--llm-retry-base-ms', '10',
    '--max-depth', String(over.maxDepth ?? 2),
    '--min-splits', String(over.minSplits ?? 2),
    '--max-splits', String(over.maxSplits ?? 3),
    '--settle-ms', String(SETTLE_MS),
    '--lease-ms', String(LEASE_MS),
    '--accept-timeout-ms', String(ACCEPT_TIMEOUT_MS),
    '--announce-interval-ms', '1000'
  ]
  if (over.rootSplitCount !== undefined) args.push('--root-split-count', String(over.rootSplitCount))
  return args
}

/**
 * Starts the planning half of a role swarm on `args`: an observer, one decomposer and two
 * scorers (the quorum). @returns the observer, which submits goals and watches the tree.
 */
export async function startPlanners (swarm: TestSwarm, args: string[]): Promise<TestPeer> {
  const observer = await swarm.start({ role: 'observer', name: 'observer', args })
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  return observer
}

/**
 * A stand-in whose scorers say every subgoal needs `capability`; every other request is
 * answered like the demo model. The plan's leaves then all ask for that capability.
 */
export async function startStandinRequiring (capability: string): Promise<LlmStandin> {
  return await startStandin(async (req) => {
    if (req.purpose !== 'score') return null
    const reply = await demoResponder(req) as { json: { subgoals: { required_capability: string }[] } }
    for (const s of reply.json.subgoals) s.required_capability = capability
    return reply as StandinReply
  })
}

/** A stand-in answering like the demo model, unless `responder` decides otherwise (null = demo). */
/**
 * A stand-in responder for a plan of `goal` whose root's first subgoal is a branch of its own (the
 * rest are leaves) and whose branch's execute calls take 60 s, so a branch cancel finds one in
 * flight; `branchText()` is that subgoal's text once the root's split was scored (else null).
 */
export function longBranch (goal: string): { respond: (req: StandinRequest) => Promise<StandinReply | null>, branchText: () => string | null } {
  let branchText: string | null = null
  return {
    branchText: () => branchText,
    respond: async (req) => {
      if (req.purpose === 'score' && req.prompt.startsWith(`Goal: ${goal}\n`)) {
        branchText ??= proposedSubgoals(req.prompt)[0] ?? null
        return scoreReply(req, 0.9, (_text, i) => ({ is_atomic: i !== 0, required_capability: 'can_write_text' }))
      }
      if (req.purpose === 'execute' && branchText !== null && req.prompt.includes(branchText)) {
        const reply = await demoResponder(req)
        return typeof reply === 'object' ? { ...reply, latencyMs: 60_000 } : reply
      }
      return null
    }
  }
}

export async function startStandin (responder?: (req: StandinRequest) => StandinReply | null | Promise<StandinReply | null>): Promise<LlmStandin> {
  return await LlmStandin.start({ script: async (req) => (responder === undefined ? null : await responder(req)) ?? await demoResponder(req) })
}

/** The rule flags a test may start its peers with besides roleArgs' (say --max-hold-ms). */
export interface RuleFlags { maxHoldMs?: number, acceptTimeoutMs?: number }

/** The rules the peers of roleArgs run with, with a test's own flags: what their trees are judged by. */
export function rulesOf (flags: RuleFlags = {}): SwarmRules {
  return swarmRules({ settleWindowMs: SETTLE_MS, maxHoldMs: flags.maxHoldMs, acceptance: { timeoutMs: flags.acceptTimeoutMs ?? ACCEPT_TIMEOUT_MS } })
}

/**
 * The plan tree as `peer` holds it now. `opts` carries the claim-rule flags the peers were
 * started with when a test changes them (say --max-hold-ms): the rule reads them.
 */
export function treeOf (peer: TestPeer, nowUs = nowMicros(), opts: RuleFlags = {}): GoalView[] {
  return buildTree(new PlanState(peer.envelopes.values()), { nowUs, rules: rulesOf(opts) })
}

export function progressOf (peer: TestPeer, goalId: string, opts: RuleFlags = {}): PlanProgress | undefined {
  const root = treeOf(peer, nowMicros(), opts).find((r) => r.id === goalId)
  return root === undefined ? undefined : planProgress(root)
}

/** Waits until `peer` holds the goal's complete plan (every leaf done or failed). */
export async function waitComplete (peer: TestPeer, goalId: string, timeoutMs = 60_000, opts: RuleFlags = {}): Promise<PlanProgress> {
  await peer.waitFor(() => progressOf(peer, goalId, opts)?.complete === true, `the complete plan of ${goalId}`, timeoutMs)
  return progressOf(peer, goalId, opts) as PlanProgress
}


/** Number of ResultMsgs per node_id that `peer` holds. */
export function resultsPerNode (peer: TestPeer): Map<string, number> {
  const m = new Map<string, number>()
  for (const e of peer.envelopes.values()) if (e.kind === 'result') m.set(e.body.node_id, (m.get(e.body.node_id) ?? 0) + 1)
  return m
}

/** treeHash of each peer's tree at one common clock reading. */
export function hashes (peers: TestPeer[]): string[] {
  const nowUs = nowMicros()
  return peers.map((p) => treeHash(treeOf(p, nowUs)))
}

/** The stand-in's execute requests, by the task text of each. */
export function executedTasks (standin: LlmStandin): string[] {
  return standin.requests.filter((r) => r.purpose === 'execute').map((r) => /^Task: (.*)$/m.exec(r.prompt)?.[1] ?? '?')
}

/** Stand-in latency of execute calls in the racing tests (ms): a model call outlasts claim delivery. */
export const EXECUTE_LATENCY_MS = 400

/** A responder adding EXECUTE_LATENCY_MS to execute and synthesis calls (demo answers otherwise). */
export async function slowExecute (req: StandinRequest): Promise<StandinReply | null> {
  if (req.purpose !== 'execute' && req.purpose !== 'synthesize') return null
  const reply = await demoResponder(req)
  return typeof reply === 'object' ? { ...reply, latencyMs: EXECUTE_LATENCY_MS } : reply
}

/** Execute calls of a stand-in by outcome, once every one has ended (answered or aborted). */
export async function executeCalls (standin: LlmStandin, timeoutMs = 10_000): Promise<{ started: number, aborted: number, completed: string[] }> {
  const calls = (): StandinRequest[] => standin.requests.filter((r) => r.purpose === 'execute')
  await waitUntil('every execute call to end', () => calls().every((r) => r.outcome !== null), timeoutMs)
  const all = calls()
  return {
    started: all.length,
    aborted: all.filter((r) => r.outcome === 'aborted').length,
    completed: all.filter((r) => r.outcome === 'answered').map((r) => /^Task: (.*)$/m.exec(r.prompt)?.[1] ?? '?')
  }
}
