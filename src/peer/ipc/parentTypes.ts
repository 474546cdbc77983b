/**
 * Shapes of the parent-side peer client (parent.ts): how a child is launched, how it ended,
 * the client's events and its typed error.
 */
import type { AnyEnvelope } from '../../plan/protocol/schemas'
import type { ChildMessage, OutputState, Refusal } from './protocol'

export type { CodeSandbox, Refusal, UnreachableBootstrap } from './protocol'
export type ReadyMsg = Extract<ChildMessage, { type: 'ready' }>
export type StatusMsg = Extract<ChildMessage, { type: 'status' }>
export type LogMsg = Extract<ChildMessage, { type: 'log' }>
export type ModelRequestMsg = Extract<ChildMessage, { type: 'model-request' }>

/** How to start one peer child. */
export interface PeerChildLaunch {
  /** Entry script (absolute path of dist/peer.js, or another entry such as a test injector). */
  script: string
  args: readonly string[]
  /** Shown in errors ("peer executor-1 ..."). */
  label: string
  /** Environment of the child (API keys travel here, never in args). Default process.env. */
  env?: NodeJS.ProcessEnv
  /** Node executable; default the parent's runtime (under Electron: Electron as Node). */
  execPath?: string
  /** Node flags of the child (e.g. ['--import', 'tsx']). Default none. */
  execArgv?: readonly string[]
  /** A command prefix the child runs under, e.g. ['ip', 'netns', 'exec', 'ns1']. */
  wrap?: readonly string[]
  cwd?: string
}

/** How a child ended. `expected`: the parent asked it to stop; `beforeReady`: no `ready` came. */
export interface ExitInfo { code: number | null, signal: NodeJS.Signals | null, expected: boolean, beforeReady: boolean }

/** Why a request or a wait failed. */
export type PeerClientErrorCode = 'not-running' | 'channel-closed' | 'timeout' | 'refused' | 'exited'

/**
 * A failed request or wait; `code` says why ('refused' carries the child's own message, and
 * `refusal` its reason when the child names one, e.g. 'not_origin' for a cancel-goal;
 * `outputState` why a get-output has no text now, e.g. 'result_damaged').
 */
export class PeerClientError extends Error {
  constructor (readonly code: PeerClientErrorCode, message: string, readonly refusal: Refusal | null = null, readonly outputState: OutputState | null = null) {
    super(message)
    this.name = 'PeerClientError'
  }
}

/** Events of a PeerClient (node:events). */
export interface PeerClientEvents {
  /** Every IPC message as received, valid or not, after its typed event (test injectors answer outside ChildMessage). */
  message: [raw: unknown]
  /** A message that failed validation, or an envelope that failed checkEnvelope, with why. */
  invalid: [reason: string]
  ready: [ReadyMsg]
  /**
   * Checked envelopes: the snapshot after `ready` (in batches), then each new one; for new
   * ones, when the peer merged each (epoch ms, same order; NaN where the peer sent none).
   */
  envelopes: [AnyEnvelope[], mergedAt?: number[]]
  status: [StatusMsg]
  log: [LogMsg]
  /** A --llm vscode-lm peer asks for a model reply (answer with send: model-reply or model-error, same call_id). */
  modelRequest: [ModelRequestMsg]
  /** The peer no longer wants the answer to this call. */
  modelAbort: [callId: string]
  stdout: [line: string]
  stderr: [line: string]
  /** A spawn or send failure (the child may never have started). */
  error: [Error]
  /** Once, when the process has exited. */
  exit: [ExitInfo]
}

/** ms the child gets to answer `shutdown` before SIGTERM, and SIGTERM before SIGKILL. */
export const STOP_GRACE_MS = 2500
export const TERM_GRACE_MS = 1500
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000

/** "code 1", "signal SIGKILL" or "spawn failed". */
export function describeExit (e: Pick<ExitInfo, 'code' | 'signal'>): string {
  if (e.signal !== null) return `signal ${e.signal}`
  if (e.code !== null) return `code ${e.code}`
  return 'spawn failed'
}
