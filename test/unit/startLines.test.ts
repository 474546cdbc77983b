/**
 * What a peer prints at start (src/peer/startLines.ts): role, name, the LLM provider and model
 * with why it was chosen, and the address line other peers pass to --bootstrap.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { makeConfig } from '../support/peerConfig'
import { capabilitiesText, discoveryLine, llmLine, startLines } from '../../src/peer/startLines'
import { parseCli } from '../../src/peer/cli'
import type { PeerConfig } from '../../src/peer/config'

const ID = '12D3KooWExamplePeer'
const llm = { model: null, baseUrl: null, apiKey: null, maxRetries: 3, retryBaseMs: 1000 }

describe('peer start lines', () => {
  test('a paid API chosen by default because ANTHROPIC_API_KEY is set says so', () => {
    const c = makeConfig('scorer', { llm: { ...llm, provider: 'anthropic', apiKey: 'k', chosenBy: 'default' } })
    assert.equal(llmLine(c), 'LLM: anthropic, model claude-sonnet-4-6 (a paid API, chosen because ANTHROPIC_API_KEY is set; --llm offline-demo avoids it)')
    const flagged = makeConfig('scorer', { llm: { ...llm, provider: 'anthropic', apiKey: 'k', model: 'claude-haiku-4-5', baseUrl: 'http://127.0.0.1:9000/', chosenBy: 'flag' } })
    assert.equal(llmLine(flagged), 'LLM: anthropic, model claude-haiku-4-5 at http://127.0.0.1:9000/ (a paid API, chosen with --llm)')
  })

  test('an OpenAI-compatible server, the offline demo model and an observer', () => {
    assert.equal(llmLine(makeConfig('executor', { llm: { ...llm, provider: 'openai-compatible', model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1' } })),
      'LLM: openai-compatible, model llama3.1 at http://127.0.0.1:11434/v1 (no API key)')
    assert.equal(llmLine(makeConfig('decomposer', { llm: { ...llm, provider: 'offline-demo', chosenBy: 'default' } })),
      'LLM: offline-demo (synthetic output, no network; chosen because ANTHROPIC_API_KEY is not set)')
    assert.equal(llmLine(makeConfig('observer', { llm: { ...llm, provider: 'anthropic', apiKey: 'k' } })), 'LLM: none (an observer makes no LLM calls)')
  })

  test('role line with name and capabilities; one address line with the listen multiaddrs, those another machine can dial first', () => {
    const c = makeConfig('executor', { name: 'executor-4003', displayName: 'laptop of Ana', capabilities: ['can_write_text', 'can_run_code'], llm: { ...llm, provider: 'offline-demo', chosenBy: 'flag' } })
    const addrs = [`/ip4/127.0.0.1/tcp/4003/p2p/${ID}`, `/ip4/192.168.1.20/tcp/4003/p2p/${ID}`]
    assert.deepEqual(startLines(c, ID, addrs), [
      `goal-swarm-peer: executor "laptop of Ana" (can_write_text, can_run_code) in swarm "default", PeerId ${ID}`,
      'LLM: offline-demo (synthetic output, no network)',
      `address: ${addrs[1]} ${addrs[0]}`,
      'discovery: mDNS on the LAN; no --bootstrap address (others dial this peer)'
    ])
    // A started executor lists what it offers: can_run_code only with a sandbox, can_query_api with its MCP tools.
    const offered = startLines(c, ID, addrs, undefined, { capabilities: ['can_write_text', 'can_query_api'], mcpTools: 3 })[0]
    assert.equal(offered, `goal-swarm-peer: executor "laptop of Ana" (can_write_text, can_query_api with 3 MCP tools) in swarm "default", PeerId ${ID}`)
    assert.equal(capabilitiesText({ capabilities: ['can_query_api'], mcpTools: 1 }), 'can_query_api with 1 MCP tool')
    assert.equal(capabilitiesText({ capabilities: ['can_write_text', 'can_query_api'], mcpTools: 0 }), 'can_write_text, can_query_api', 'without tools the model alone answers')
    // Listed in the order to pass them on: another machine can dial the LAN address, not the
    // loopback one nor one relayed through an anchor on loopback.
    const relayed = `/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWAnchor/p2p-circuit/p2p/${ID}`
    assert.equal(startLines(c, ID, [addrs[0] as string, relayed, addrs[1] as string])[2], `address: /ip4/192.168.1.20/tcp/4003/p2p/${ID} /ip4/127.0.0.1/tcp/4003/p2p/${ID}`)
    assert.equal(startLines(c, ID, [`/ip4/127.0.0.1/tcp/4003/p2p/${ID}`])[2], `address: /ip4/127.0.0.1/tcp/4003/p2p/${ID}`)
    assert.equal(discoveryLine(makeConfig('observer', { mdns: false })), 'discovery: mDNS off (this peer listens on loopback only); no --bootstrap address (others dial this peer)')
    assert.equal(discoveryLine(makeConfig('observer', { host: '0.0.0.0', mdns: true, bootstrap: ['/ip4/10.0.0.2/tcp/1'] })), 'discovery: mDNS on the LAN; 1 --bootstrap address')
    assert.equal(discoveryLine(makeConfig('observer', { host: '0.0.0.0', mdns: false })), 'discovery: mDNS off; no --bootstrap address (others dial this peer)')
  })

  test('mDNS off says why: --no-mdns when the flag turned it off, loopback when the address did', () => {
    const line = (argv: string[]): string => {
      const r = parseCli(['--role', 'observer', ...argv], { out: () => {}, err: () => {}, env: {} })
      assert.equal(r.kind, 'run')
      return discoveryLine((r as { config: PeerConfig }).config)
    }
    assert.equal(line(['--no-mdns']), 'discovery: mDNS off (--no-mdns); no --bootstrap address (others dial this peer)')
    assert.equal(line(['--host', '0.0.0.0', '--no-mdns']), 'discovery: mDNS off (--no-mdns); no --bootstrap address (others dial this peer)')
    assert.equal(line([]), 'discovery: mDNS off (this peer listens on loopback only); no --bootstrap address (others dial this peer)')
    assert.equal(line(['--host', '0.0.0.0']), 'discovery: mDNS on the LAN; no --bootstrap address (others dial this peer)')
  })
})
