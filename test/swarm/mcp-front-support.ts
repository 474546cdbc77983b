/**
 * What the MCP front door's swarm tests share: `dist/peer.js mcp` started and spoken to by the MCP
 * SDK's own Client over stdio (as Claude Code or VS Code starts an MCP server), tool calls read as
 * text or JSON, and a test's swarm, stand-in and scratch folder stopped when it ends.
 * Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestContext } from 'node:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { TestSwarm } from '../support/peers'
import { startStandin } from './roles-support'

export const PEER = fileURLToPath(new URL('../../dist/peer.js', import.meta.url))

export interface ToolReply { text: string, isError: boolean }

/** Calls `name` and returns its text and error flag (the SDK client rejects only on protocol failures). */
export async function call (client: Client, name: string, args: Record<string, unknown>, opts: Parameters<Client['callTool']>[2] = {}): Promise<ToolReply> {
  const res = await client.callTool({ name, arguments: args }, undefined, opts)
  const content = res.content as Array<{ type: string, text?: string }>
  return { text: content.map((c) => c.text ?? '').join('\n'), isError: res.isError === true }
}

/** The answers' fields these tests read (the tools answer JSON text). */
export interface Answer {
  goal_id: string
  status: string
  state: string
  done: number
  leaves: number
  final_answer: string | null
  note?: string
  result: string
  progress: { leaves: number, done: number, complete: boolean }
  spend: { calls: number }
  tree: { children: Array<{ kind: string, node_id: string, status: string, executor: string | null }> }
  plans: Array<{ goal_id: string, goal: string, submitted_here: boolean }>
}

/** A tool's JSON answer; fails the test on a tool error. */
export async function json (client: Client, name: string, args: Record<string, unknown>, opts: Parameters<Client['callTool']>[2] = {}): Promise<Answer> {
  const r = await call(client, name, args, opts)
  assert.equal(r.isError, false, `${name}: ${r.text}`)
  return JSON.parse(r.text) as Answer
}

/**
 * The command line and environment of `dist/peer.js mcp` as an MCP client starts it: its
 * identity and data under `dir`, loopback, mDNS off, bootstrapped to `bootstrap` (none when
 * empty), JSON logs; `env` adds to its environment (say GOAL_SWARM_CLOCK_OFFSET_MS).
 */
export function frontDoorCommand (dir: string, bootstrap: string[], args: string[], env: Record<string, string> = {}): { command: string, args: string[], env: Record<string, string> } {
  return {
    command: process.execPath,
    args: [PEER, 'mcp', '--identity-dir', path.join(dir, 'identities'), '--data-dir', path.join(dir, 'data'), '--host', '127.0.0.1', '--no-mdns', '--log-format', 'json', ...(bootstrap.length === 0 ? [] : ['--bootstrap', ...bootstrap]), ...args],
    env: { ...process.env as Record<string, string>, HOME: dir, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', ...env }
  }
}

/** frontDoorCommand as the SDK's stdio client transport, its stderr piped. */
export function frontDoor (dir: string, bootstrap: string[], args: string[], env: Record<string, string> = {}): StdioClientTransport {
  return new StdioClientTransport({ ...frontDoorCommand(dir, bootstrap, args, env), stderr: 'pipe' })
}

/** Stops a test's MCP server: closes its stdin, then kills it by pid in case it lingers. */
export async function stopFrontDoor (transport: StdioClientTransport | null): Promise<void> {
  const pid = transport?.pid ?? null
  await transport?.close().catch(() => {})
  if (pid !== null) { try { process.kill(pid, 'SIGKILL') } catch {} }
}

/**
 * What each test starts: a swarm, the LLM stand-in (answering like the demo model unless
 * `responder` decides otherwise) and a scratch folder; `door.transport` holds
 * the test's MCP server, stopped with the rest when the test ends (pass or fail).
 */
export async function setUp (t: TestContext, stem: string, responder?: Parameters<typeof startStandin>[0]): Promise<{ swarm: TestSwarm, standin: Awaited<ReturnType<typeof startStandin>>, dir: string, door: { transport: StdioClientTransport | null } }> {
  const swarm = new TestSwarm()
  const standin = await startStandin(responder)
  const door: { transport: StdioClientTransport | null } = { transport: null }
  t.after(async () => {
    await stopFrontDoor(door.transport)
    await swarm.close()
    await standin.close()
  })
  return { swarm, standin, dir: mkdtempSync(path.join(tmpdir(), stem)), door }
}
