/**
 * The executor's offer following its MCP tools (src/peer/roles/executor/offerWatch.ts): a server
 * whose start is retried brings can_query_api after the executor started ("offered"), and a
 * lost server's tools bring it back ("offered again").
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import pino from 'pino'
import { OfferWatch } from '../../src/peer/roles/executor/offerWatch'
import type { McpTool, McpToolSet, ServerFailure } from '../../src/peer/tools/mcpClients'

/** A tool set whose tools and failures the test sets, telling its listeners. */
function fakeSet (): { set: McpToolSet, change: (tools: McpTool[], failures: ServerFailure[]) => void } {
  let tools: McpTool[] = []
  let failures: ServerFailure[] = []
  const listeners = new Set<() => void>()
  const set: McpToolSet = {
    get tools () { return tools },
    get failures () { return failures },
    get connected () { return [...new Set(tools.map((t) => t.server))] },
    call: async () => { throw new Error('not called') },
    onChange (fn) { listeners.add(fn); return { dispose () { listeners.delete(fn) } } },
    close: async () => {}
  }
  return { set, change: (t, f) => { tools = t; failures = f; for (const fn of listeners) fn() } }
}

test('can_query_api comes with the first tool of a server whose start was retried, and comes back "again" after a loss', () => {
  const records: Array<Record<string, unknown>> = []
  const log = pino({ level: 'info' }, { write (line: string) { records.push(JSON.parse(line) as Record<string, unknown>) } })
  const { set, change } = fakeSet()
  const retrying: ServerFailure = { server: 'slow', reason: 'did not complete the MCP handshake; its start is being retried', restarting: true }
  change([], [retrying])
  const watch = new OfferWatch({ capabilities: ['can_write_text'], tools: null, dropped: null, reason: null }, set, log)
  let told = 0
  watch.onOfferChange(() => { told++ })
  watch.follow(() => {})
  assert.deepEqual(watch.capabilities, ['can_write_text'])
  const ping: McpTool = { name: 'slow__ping', server: 'slow', tool: 'ping', description: '', inputSchema: {} }
  change([ping], [])
  assert.deepEqual(watch.capabilities, ['can_write_text', 'can_query_api'])
  assert.deepEqual(watch.tools(), ['slow/ping'])
  change([], [{ server: 'slow', reason: 'the server process ended; it is being restarted', restarting: true }])
  change([ping], [])
  assert.deepEqual(records.filter((r) => r.event === 'capability_offered' || r.event === 'capability_not_offered').map((r) => [r.event, r.msg]), [
    ['capability_offered', 'can_query_api is offered with 1 MCP tool: slow__ping'],
    ['capability_not_offered', 'can_query_api is not offered: no MCP tool is usable (server "slow": the server process ended; it is being restarted)'],
    ['capability_offered', 'can_query_api is offered again with 1 MCP tool: slow__ping']
  ])
  assert.equal(told, 3)
  watch.dispose()
})
