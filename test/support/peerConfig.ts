/**
 * A peer config for tests that run a peer in-process, filled with the CLI's defaults
 * (src/peer/config.ts DEFAULTS), so a test overrides only what it is about.
 */
import path from 'node:path'
import { apiKeyFromEnv, defaultLlmProvider, DEFAULT_EXECUTOR_CAPABILITIES, DEFAULTS, type PeerConfig } from '../../src/peer/config'
import { DEFAULT_ACCEPTANCE } from '../../src/plan/rules/acceptance'
import type { Role } from '../../src/plan/protocol/schemas'

/**
 * A complete config from a role and optional overrides, filling every default the CLI fills
 * (name `${role}-${port}`, data dir `.goal-swarm/<name>`, identity dir `.goal-swarm/identities`).
 * For tests that run a peer in-process.
 */
export function makeConfig (role: Role, overrides: Partial<PeerConfig> = {}): PeerConfig {
  const port = overrides.port ?? DEFAULTS.port
  const name = overrides.name ?? `${role}-${port}`
  const provider = overrides.llm?.provider ?? defaultLlmProvider()
  return {
    role,
    name,
    host: DEFAULTS.host,
    port,
    dataDir: path.join(DEFAULTS.baseDir, name),
    identityDir: path.join(DEFAULTS.baseDir, 'identities'),
    capabilities: role === 'executor' ? [...DEFAULT_EXECUTOR_CAPABILITIES] : [],
    swarm: DEFAULTS.swarm,
    swarmKeyFile: null,
    mdns: true,
    mdnsIntervalMs: DEFAULTS.mdnsIntervalMs,
    bootstrap: [],
    submitGoal: null,
    submitBudget: null,
    cancelGoal: null,
    reportFile: null,
    logFormat: 'text',
    verbose: false,
    maxDepth: DEFAULTS.maxDepth,
    minSplits: DEFAULTS.minSplits,
    maxSplits: DEFAULTS.maxSplits,
    rootSplitCount: null,
    acceptance: { ...DEFAULT_ACCEPTANCE },
    leaseMs: DEFAULTS.leaseMs,
    maxHoldMs: DEFAULTS.maxHoldMs,
    settleFloorMs: DEFAULTS.settleFloorMs,
    settleMaxMs: DEFAULTS.settleMaxMs,
    maxConcurrentLeaves: DEFAULTS.maxConcurrentLeaves,
    syncGraceMs: DEFAULTS.syncGraceMs,
    announceIntervalMs: DEFAULTS.announceIntervalMs,
    maxReproposals: DEFAULTS.maxReproposals,
    proposersPerGoal: DEFAULTS.proposersPerGoal,
    ...overrides,
    llm: {
      provider,
      model: null,
      baseUrl: null,
      apiKey: apiKeyFromEnv(provider),
      maxRetries: DEFAULTS.llmMaxRetries,
      retryBaseMs: DEFAULTS.llmRetryBaseMs,
      ...overrides.llm
    }
  }
}
