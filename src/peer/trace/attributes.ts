/**
 * Span and attribute names (DESIGN "Tracing"). The gen_ai.* names are the OpenTelemetry GenAI
 * semantic conventions; they are still "development" there, so they are copied here rather than
 * imported from the conventions' incubating entry point, as its authors advise. The goal_swarm.*
 * names are this project's own.
 */

/** The tracer's (instrumentation scope's) and the service's name. */
export const SERVICE_NAME = 'goal-swarm-peer'

/** Span names: one per thing a peer does for a plan. */
export const SPAN = {
  /** The whole plan, from the root goal's created_at to its final answer or cancel; the origin emits it. */
  workflow: 'invoke_workflow',
  decompose: 'decompose',
  score: 'score',
  accept: 'accept',
  claim: 'claim',
  execute: 'execute',
  synthesis: 'synthesis',
  cancel: 'cancel',
  /** The wait of a goal whose proposals never qualified, up to the fallback split (DESIGN R3), emitted with its accept span. */
  acceptanceFallback: 'acceptance_fallback',
  /** A decomposer standing by for a ranked proposer (DESIGN R3). */
  standby: 'standby',
  /** A leaf waiting for the results it depends on (DESIGN R11), emitted by the executor that ran it. */
  blocked: 'blocked'
} as const

/** `chat {model}`: one model request (GenAI conventions' inference span name). */
export function chatSpanName (model: string): string {
  return `chat ${model}`
}

/** `execute_tool {tool}`: one MCP tool call (GenAI conventions' tool span name). */
export function toolSpanName (tool: string): string {
  return `execute_tool ${tool}`
}

/** GenAI semantic conventions' attributes. */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  /** The name before gen_ai.provider.name; still read by many backends, so both are set. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  finishReasons: 'gen_ai.response.finish_reasons',
  agentName: 'gen_ai.agent.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  systemInstructions: 'gen_ai.system_instructions',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result'
} as const

/** gen_ai.operation.name values used here. */
export const OPERATION = { chat: 'chat', invokeAgent: 'invoke_agent', executeTool: 'execute_tool', invokeWorkflow: 'invoke_workflow' } as const

/** The general convention for a failed operation's kind. */
export const ERROR_TYPE = 'error.type'

/** This project's attributes. */
export const SWARM = {
  goalId: 'goal_swarm.goal_id',
  nodeId: 'goal_swarm.node_id',
  rootGoalId: 'goal_swarm.root_goal_id',
  peerId: 'goal_swarm.peer_id',
  role: 'goal_swarm.role',
  peerName: 'goal_swarm.peer_name',
  proposalId: 'goal_swarm.proposal_id',
  attempt: 'goal_swarm.attempt',
  depth: 'goal_swarm.depth',
  subgoals: 'goal_swarm.subgoals',
  score: 'goal_swarm.score',
  finalScore: 'goal_swarm.final_score',
  fallback: 'goal_swarm.fallback',
  reused: 'goal_swarm.vote_reused',
  capability: 'goal_swarm.capability',
  claimedAt: 'goal_swarm.claimed_at',
  settleWindowMs: 'goal_swarm.settle_window_ms',
  outcome: 'goal_swarm.outcome',
  success: 'goal_swarm.success',
  purpose: 'goal_swarm.llm.purpose',
  llmProvider: 'goal_swarm.llm.provider',
  requestId: 'goal_swarm.llm.request_id',
  callAttempt: 'goal_swarm.llm.attempt',
  originPeer: 'goal_swarm.origin_peer',
  planState: 'goal_swarm.plan_state',
  leaves: 'goal_swarm.leaves',
  leavesDone: 'goal_swarm.leaves_done',
  goalText: 'goal_swarm.goal_text',
  output: 'goal_swarm.output'
} as const
