/**
 * The anchor flags (DESIGN "Topology"): --role anchor is an observer that relays, refuses to
 * publish goals of its own and names its identity anchor-<port>; --anchor takes TCP multiaddrs
 * that name the anchor's PeerId, and the start lines say what the peer is and how many anchors
 * it uses.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseCli } from '../../src/peer/cli'
import { startLines } from '../../src/peer/startLines'

const ANCHOR = '/ip4/203.0.113.10/tcp/4001/p2p/12D3KooWMapdkxEf5LMGcnPzh28jHfKXuLCz93jN7wQMesdBi9yy'

const parse = (argv: string[]): { r: ReturnType<typeof parseCli>, err: string } => {
  let err = ''
  const r = parseCli(argv, { out: () => {}, err: (s) => { err += s }, env: {} })
  return { r, err }
}

describe('--role anchor and --anchor', () => {
  it('--role anchor runs an observer with the relay server, identity anchor-<port>', () => {
    const { r } = parse(['--role', 'anchor', '--port', '4001'])
    assert.ok(r.kind === 'run')
    assert.equal(r.config.role, 'observer')
    assert.equal(r.config.anchor, true)
    assert.equal(r.config.name, 'anchor-4001')
    assert.deepEqual(r.config.anchors, [])
    const lines = startLines(r.config, '12D3KooWExample', ['/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWExample'])
    assert.match(lines[0] ?? '', /^goal-swarm-peer: anchor \(relays for the swarm\) "anchor-4001" in swarm "default"/)
  })

  it('an anchor refuses --submit-goal and --cancel-goal, naming the flag', () => {
    const a = parse(['--role', 'anchor', '--submit-goal', 'Plan a trip'])
    assert.deepEqual(a.r, { kind: 'exit', code: 2 })
    assert.match(a.err, /^error: option '--submit-goal': has no use with --role anchor: an anchor relays and keeps the plan, and publishes nothing of its own/)
    const c = parse(['--role', 'anchor', '--cancel-goal', '0123456789abcdef'])
    assert.deepEqual(c.r, { kind: 'exit', code: 2 })
    assert.match(c.err, /option '--cancel-goal': has no use with --role anchor/)
  })

  it('--anchor is repeatable, needs a TCP multiaddr ending in /p2p/<PeerId>, and shows on the discovery line', () => {
    const { r } = parse(['--role', 'scorer', '--llm', 'offline-demo', '--no-mdns', '--anchor', ANCHOR, '--anchor', ANCHOR.replace('203.0.113.10', '198.51.100.4')])
    assert.ok(r.kind === 'run')
    assert.equal(r.config.anchors?.length, 2)
    assert.equal(r.config.anchor, undefined)
    assert.match(startLines(r.config, '12D3KooWExample', []).at(-1) ?? '', /^discovery: mDNS off \(--no-mdns\); no --bootstrap address \(others dial this peer\); 2 --anchor addresses$/)
    const noId = parse(['--role', 'scorer', '--anchor', '/ip4/203.0.113.10/tcp/4001'])
    assert.deepEqual(noId.r, { kind: 'exit', code: 2 })
    assert.match(noId.err, /option '--anchor <multiaddr\.\.\.>' argument '\/ip4\/203\.0\.113\.10\/tcp\/4001' is invalid\. needs \/p2p\/<PeerId> at the end/)
    const udp = parse(['--role', 'scorer', '--anchor', '/ip4/203.0.113.10/udp/4001'])
    assert.match(udp.err, /expected a TCP multiaddr/)
    const relayed = parse(['--role', 'scorer', '--anchor', `${ANCHOR}/p2p-circuit/p2p/12D3KooWExampleMemberxxxxxxxxxxxxxxxxxxxxxxxxxxxx`])
    assert.deepEqual(relayed.r, { kind: 'exit', code: 2 })
    assert.match(relayed.err, /is invalid\. is a relayed address \(it contains \/p2p-circuit\), a member reached through an anchor: give the anchor's own address/)
  })

  it('the start line of an anchor says an anchor makes no LLM calls', () => {
    const { r } = parse(['--role', 'anchor', '--port', '4001'])
    assert.ok(r.kind === 'run')
    assert.ok(startLines(r.config, '12D3KooWExample', []).includes('LLM: none (an anchor makes no LLM calls)'))
  })
})

describe('--capabilities can_query_api without --mcp-config', () => {
  it('is a usage error naming --capabilities: the executor would offer nothing', () => {
    const { r, err } = parse(['--role', 'executor', '--llm', 'offline-demo', '--capabilities', 'can_query_api'])
    assert.deepEqual(r, { kind: 'exit', code: 2 })
    assert.match(err, /^error: option '--capabilities': can_query_api alone needs --mcp-config/)
    const both = parse(['--role', 'executor', '--llm', 'offline-demo', '--capabilities', 'can_write_text,can_query_api'])
    assert.equal(both.r.kind, 'run', 'with another capability it starts, and says why can_query_api is not offered')
  })
})
