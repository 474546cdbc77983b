/**
 * The MCP front door (src/peer/front/mcpServer.ts) over the MCP SDK's in-memory transport, on a
 * plan state the test builds: the real server and the SDK's own client, no peer process. For
 * tests of what a client reads (texts, status words, failure reasons); the swarm tier runs the
 * front door as `dist/peer.js mcp`.
 */
import { pino } from 'pino'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { startMcpFrontDoor, type FrontDoorPeer } from '../../src/peer/front/mcpServer'
import type { Micros } from '../../src/plan/protocol/time'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import type { PlanState } from '../../src/plan/state/planState'
import { makeConfig } from './peerConfig'

/** A connected client and a way to stop both sides. */
export interface MemoryFrontDoor { client: Client, close: () => Promise<void> }

/** A tool's answer: its text parts joined, and whether it is an error. */
export interface ToolText { text: string, isError: boolean }

/**
 * Starts the front door on `state` read at `nowUs` (a peer that has synced with one connected
 * peer, submits nothing) and connects a client.
 * @param output what get_result reads for a task's result blob (default: none)
 */
export async function startMemoryFrontDoor (state: PlanState, nowUs: Micros, output: (id: string) => string | null = () => null): Promise<MemoryFrontDoor> {
  const peer = {
    peerId: 'peer-mcp',
    state,
    rules: DEFAULT_RULES,
    bus: { onMessage: () => ({ dispose () {} }) },
    now: () => nowUs,
    submitGoal: async () => { throw new Error('no goal is submitted in this test') },
    cancelGoal: async () => {},
    getOutput: async (id: string) => output(id),
    status: () => ({ connected_peers: 1 }),
    sync: { syncedPeers: 1 }
  } as unknown as FrontDoorPeer
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  const server = await startMcpFrontDoor(peer, makeConfig('observer'), pino({ level: 'silent' }), serverSide)
  const client = new Client({ name: 'test', version: '0' })
  await client.connect(clientSide)
  return { client, close: async () => { await client.close(); server.dispose() } }
}

/** Calls tool `name` with `args`. */
export async function toolText (client: Client, name: string, args: Record<string, unknown>): Promise<ToolText> {
  const r = await client.callTool({ name, arguments: args }) as { content: Array<{ type: string, text: string }>, isError?: boolean }
  return { text: r.content.map((c) => c.text).join(''), isError: r.isError === true }
}
