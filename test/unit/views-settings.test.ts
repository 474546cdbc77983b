import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import * as path from 'node:path'
import { describe, it } from 'node:test'
import { parseCli } from '../../src/peer/cli'
import { peerArgv } from '../../src/peer/ipc/argv'
import { helperBootstrap, loopbackDialAddrs, specFromSettings, type PeerSpec } from '../../src/extension/peerSpec'
import { DEFAULT_SETTINGS, effectiveProvider, goalBudget, Keys, readSettings, type SettingKey } from '../../src/extension/settings'
import { backoffDelay, DEFAULT_RESTART_POLICY } from '../../src/extension/restartPolicy'
import { statusBarModel, type PeersSnapshot } from '../../src/views/statusModel'

function reader (values: Partial<Record<SettingKey, unknown>>, baseDir: string | null = '/ws') {
  return { baseDir, get: (k: SettingKey) => values[k] }
}

const PEER_ID = '12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo'

describe('extension settings (views tier: pure rules)', () => {
  it('unset settings give the documented defaults with no problems', () => {
    const { settings, problems } = readSettings(reader({}))
    assert.deepEqual(problems, [])
    assert.deepEqual(settings, DEFAULT_SETTINGS)
    assert.equal(settings.role, 'observer')
    assert.equal(settings.mdns, false)
    assert.equal(settings.llmProvider, 'auto')
  })

  it('the budget settings give each submitted goal its budget; a bad one is reported naming it (DESIGN R13)', () => {
    assert.equal(goalBudget(DEFAULT_SETTINGS), undefined)
    const { settings, problems } = readSettings(reader({ [Keys.budgetMaxCalls]: 40, [Keys.budgetMaxTokens]: 250_000 }))
    assert.deepEqual(problems, [])
    assert.deepEqual(goalBudget(settings), { max_calls: 40, max_tokens: 250_000 })
    assert.deepEqual(goalBudget(readSettings(reader({ [Keys.budgetMaxTokens]: 1000 })).settings), { max_tokens: 1000 })
    const bad = readSettings(reader({ [Keys.budgetMaxCalls]: 0, [Keys.budgetMaxTokens]: 2.5 }))
    assert.deepEqual(bad.problems.map((p) => p.key), [Keys.budgetMaxCalls, Keys.budgetMaxTokens])
    assert.match(bad.problems[0]?.message ?? '', /^goalSwarm\.budget\.maxCalls: .*got 0, using null$/)
    assert.equal(goalBudget(bad.settings), undefined)
  })

  it('an invalid value falls back to its default and the problem names the setting', () => {
    const { settings, problems } = readSettings(reader({ [Keys.listenPort]: 70000, [Keys.role]: 'boss', [Keys.minScore]: 1.5, [Keys.swarmName]: 'my swarm' }))
    assert.equal(settings.listenPort, 0)
    assert.equal(settings.role, 'observer')
    assert.equal(settings.minScore, 0.6)
    assert.equal(settings.swarmName, 'default')
    assert.deepEqual(problems.map((p) => p.key), [Keys.role, Keys.listenPort, Keys.swarmName, Keys.minScore])
    for (const p of problems) assert.ok(p.message.startsWith(`${p.key}: `), p.message)
    assert.match(problems[1]?.message ?? '', /^goalSwarm\.listenPort: .*got 70000, using 0$/)
  })

  it('a bad item of a list names the item', () => {
    const { settings, problems } = readSettings(reader({ [Keys.bootstrapPeers]: ['/ip4/10.0.0.2/tcp/4001', 'localhost:4001'], [Keys.capabilities]: ['can_fly'] }))
    assert.deepEqual(settings.bootstrapPeers, [])
    assert.deepEqual(settings.capabilities, ['can_write_text'])
    assert.match(problems.find((p) => p.key === Keys.bootstrapPeers)?.message ?? '', /expected a multiaddr .*\(item 1\)/)
    assert.match(problems.find((p) => p.key === Keys.capabilities)?.message ?? '', /\(item 0\)/)
  })

  it('goalSwarm.anchors: each entry is checked by the CLI\'s --anchor rule; a bad one is named and left out, the others kept', () => {
    const good = `/ip4/203.0.113.7/tcp/4001/p2p/${PEER_ID}`
    const ok = readSettings(reader({ [Keys.anchors]: [` ${good} `, good] }))
    assert.deepEqual(ok.problems, [])
    assert.deepEqual(ok.settings.anchors, [good], 'trimmed, each once')
    const { settings, problems } = readSettings(reader({ [Keys.anchors]: ['/ip4/203.0.113.7/tcp/4001', good, '/ip4/203.0.113.7/udp/4001/p2p/x', 'anchor.example.org:4001'] }))
    assert.deepEqual(settings.anchors, [good])
    assert.deepEqual(problems.map((p) => p.message), [
      'goalSwarm.anchors: the entry "/ip4/203.0.113.7/tcp/4001" needs /p2p/<PeerId> at the end (members reach each other through the anchor as <anchor>/p2p-circuit/p2p/<member>): copy the address line the anchor prints at start; the peers start without it',
      'goalSwarm.anchors: the entry "/ip4/203.0.113.7/udp/4001/p2p/x" expected a TCP multiaddr such as /ip4/127.0.0.1/tcp/4001/p2p/<PeerId>; the peers start without it',
      problems[2]?.message ?? ''
    ])
    assert.match(problems[2]?.message ?? '', /^goalSwarm\.anchors: the entry "anchor\.example\.org:4001" not a multiaddr \(.+\); the peers start without it$/)
    assert.deepEqual(problems.map((p) => p.key), [Keys.anchors, Keys.anchors, Keys.anchors])
    const notList = readSettings(reader({ [Keys.anchors]: good }))
    assert.deepEqual(notList.settings.anchors, [])
    assert.match(notList.problems[0]?.message ?? '', /^goalSwarm\.anchors: .*using \[\]$/)
  })

  it('the listen host must be an IP address', () => {
    const { problems } = readSettings(reader({ [Keys.listenHost]: 'my-laptop' }))
    assert.match(problems[0]?.message ?? '', /^goalSwarm\.listenHost: expected an IPv4 or IPv6 address/)
    assert.deepEqual(readSettings(reader({ [Keys.listenHost]: '0.0.0.0' })).problems, [])
  })

  it('a split range with min > max is reported and reset', () => {
    const { settings, problems } = readSettings(reader({ [Keys.minSplits]: 5, [Keys.maxSplits]: 3 }))
    assert.deepEqual([settings.minSplits, settings.maxSplits], [2, 6])
    assert.equal(problems[0]?.key, Keys.minSplits)
    assert.match(problems[0]?.message ?? '', /goalSwarm\.minSplits \(5\) is larger than goalSwarm\.maxSplits \(3\)/)
  })

  it('relative paths resolve against the workspace folder; without one they are reported', () => {
    assert.equal(readSettings(reader({ [Keys.swarmKeyFile]: 'keys/swarm.key' })).settings.swarmKeyFile, path.resolve('/ws', 'keys/swarm.key'))
    const none = readSettings(reader({ [Keys.swarmKeyFile]: 'swarm.key' }, null))
    assert.equal(none.settings.swarmKeyFile, null)
    assert.equal(none.problems[0]?.key, Keys.swarmKeyFile)
    assert.equal(readSettings(reader({ [Keys.swarmKeyFile]: '  ' })).settings.swarmKeyFile, null)
  })

  it('openai-compatible without base URL or model is reported naming both settings', () => {
    const { problems } = readSettings(reader({ [Keys.llmProvider]: 'openai-compatible' }))
    assert.deepEqual(problems.map((p) => p.key), [Keys.llmBaseUrl, Keys.llmModel])
    assert.deepEqual(readSettings(reader({ [Keys.llmProvider]: 'openai-compatible', [Keys.llmBaseUrl]: 'http://127.0.0.1:11434/v1', [Keys.llmModel]: 'llama3.1' })).problems, [])
  })

  it('auto means anthropic with a key and the offline demo model without one', () => {
    assert.equal(effectiveProvider('auto', true), 'anthropic')
    assert.equal(effectiveProvider('auto', false), 'offline-demo')
    assert.equal(effectiveProvider('openai-compatible', true), 'openai-compatible')
    assert.equal(effectiveProvider('offline-demo', true), 'offline-demo')
    assert.equal(effectiveProvider('vscode', true), 'vscode-lm')
    assert.equal(effectiveProvider('auto', false, true), 'vscode-lm', 'auto without a key uses a VS Code chat model when there is one')
    assert.equal(effectiveProvider('auto', true, true), 'anthropic', 'a stored key still comes first')
  })
})

function spec (over: Partial<PeerSpec> = {}): PeerSpec {
  return {
    ...specFromSettings(DEFAULT_SETTINGS, 'offline-demo'),
    label: 'main',
    role: 'observer',
    identity: 'editor-0123abcd',
    dataDir: '/storage/peers/editor-0123abcd',
    identityDir: '/storage/identities',
    ...over
  }
}

const io = () => {
  const err: string[] = []
  return { io: { out: () => {}, err: (s: string) => { err.push(s) }, env: {} }, err }
}

describe('peer command line built from settings', () => {
  it('the default observer: loopback, any port, no mDNS, JSON logs, storage paths', () => {
    const args = peerArgv(spec())
    assert.deepEqual(args, [
      '--role', 'observer', '--identity', 'editor-0123abcd', '--data-dir', '/storage/peers/editor-0123abcd',
      '--identity-dir', '/storage/identities', '--host', '127.0.0.1', '--port', '0', '--swarm', 'default',
      '--llm', 'offline-demo', '--max-depth', '3', '--min-splits', '2', '--max-splits', '6', '--quorum', '2',
      '--min-score', '0.6', '--log-format', 'json', '--no-mdns'
    ])
  })

  it('the peer CLI accepts every flag the extension builds and reads the same values back', () => {
    const s = spec({
      role: 'executor',
      capabilities: ['can_write_text', 'can_run_code'],
      host: '0.0.0.0',
      port: 4100,
      mdns: true,
      swarm: 'team-a',
      bootstrap: [`/ip4/127.0.0.1/tcp/4001/p2p/${PEER_ID}`, `/ip4/10.0.0.7/tcp/4002/p2p/${PEER_ID}`],
      llm: { provider: 'openai-compatible', model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1', timeoutMs: 30_000 },
      maxDepth: 2, minSplits: 3, maxSplits: 4, quorum: 3, minScore: 0.7
    })
    const { io: cliIo, err } = io()
    const r = parseCli(peerArgv(s), cliIo)
    assert.equal(r.kind, 'run', err.join(''))
    if (r.kind !== 'run') return
    const c = r.config
    assert.deepEqual(
      [c.role, c.name, c.dataDir, c.identityDir, c.host, c.port, c.swarm, c.mdns, c.logFormat],
      ['executor', 'editor-0123abcd', path.resolve('/storage/peers/editor-0123abcd'), path.resolve('/storage/identities'), '0.0.0.0', 4100, 'team-a', true, 'json'])
    assert.deepEqual(c.capabilities, ['can_write_text', 'can_run_code'])
    assert.deepEqual(c.bootstrap, s.bootstrap)
    assert.deepEqual([c.llm.provider, c.llm.model, c.llm.baseUrl, c.llm.timeoutMs], ['openai-compatible', 'llama3.1', 'http://127.0.0.1:11434/v1', 30_000])
    assert.deepEqual([c.maxDepth, c.minSplits, c.maxSplits, c.acceptance.quorum, c.acceptance.minScore], [2, 3, 4, 3, 0.7])
  })

  it('goalSwarm.anchors reach every peer as one --anchor each, which the CLI reads back', () => {
    assert.equal(peerArgv(spec()).includes('--anchor'), false)
    const anchors = [`/ip4/203.0.113.7/tcp/4001/p2p/${PEER_ID}`, '/ip4/198.51.100.4/tcp/4001/p2p/12D3KooWLLqeUgzyvjeKfnb7Ce6Ma9WGX9Z851qdkSx9PGf6Murd']
    const { settings } = readSettings(reader({ [Keys.anchors]: anchors }))
    for (const role of ['observer', 'executor'] as const) {
      const args = peerArgv(spec({ ...specFromSettings(settings, 'offline-demo'), role }))
      assert.deepEqual(args.flatMap((a, i) => (a === '--anchor' ? [args[i + 1]] : [])), anchors)
      const r = parseCli(args, io().io)
      assert.ok(r.kind === 'run')
      assert.deepEqual(r.config.anchors, anchors)
    }
  })

  it('goalSwarm.llm.timeoutMs reaches the peer only when set, and a bad value names the setting', () => {
    assert.equal(peerArgv(spec()).includes('--llm-timeout-ms'), false)
    const { settings, problems } = readSettings(reader({ [Keys.llmTimeoutMs]: 45_000 }))
    assert.deepEqual(problems, [])
    const args = peerArgv(spec(specFromSettings(settings, 'offline-demo')))
    assert.deepEqual(args.slice(args.indexOf('--llm-timeout-ms'), args.indexOf('--llm-timeout-ms') + 2), ['--llm-timeout-ms', '45000'])
    assert.deepEqual(readSettings(reader({ [Keys.llmTimeoutMs]: 5 })).problems.map((p) => p.key), [Keys.llmTimeoutMs])
  })

  it('goalSwarm.llm.baseUrl reaches a peer whose model calls a server, and not the offline demo model (the CLI refuses it there)', () => {
    const { settings } = readSettings(reader({ [Keys.llmBaseUrl]: 'http://127.0.0.1:11434/v1' }))
    const demo = peerArgv(spec(specFromSettings(settings, 'offline-demo')))
    assert.equal(demo.includes('--llm-base-url'), false)
    assert.equal(parseCli([...demo.filter((a, i) => !(a === '--role' || demo[i - 1] === '--role')), '--role', 'executor'], io().io).kind, 'run')
    const served = peerArgv(spec(specFromSettings(settings, 'anthropic')))
    assert.deepEqual(served.slice(served.indexOf('--llm-base-url'), served.indexOf('--llm-base-url') + 2), ['--llm-base-url', 'http://127.0.0.1:11434/v1'])
  })

  it('goalSwarm.dashboard.port reaches the main peer as --dashboard-port (the CLI reads it back), and a bad value names the setting', () => {
    assert.equal(readSettings(reader({})).settings.dashboardPort, 0)
    const { settings, problems } = readSettings(reader({ [Keys.dashboardPort]: 8123 }))
    assert.deepEqual(problems, [])
    const args = peerArgv(spec({ dashboardPort: settings.dashboardPort }))
    assert.deepEqual(args.slice(args.indexOf('--dashboard-port'), args.indexOf('--dashboard-port') + 2), ['--dashboard-port', '8123'])
    const r = parseCli(args, io().io)
    assert.ok(r.kind === 'run')
    assert.deepEqual(r.config.dashboard, { host: '127.0.0.1', port: 8123 })
    assert.equal(peerArgv(spec()).includes('--dashboard-port'), false, 'helpers serve no dashboard')
    for (const bad of [70000, -1, 80.5, '8080']) {
      const p = readSettings(reader({ [Keys.dashboardPort]: bad }))
      assert.deepEqual(p.problems.map((x) => x.key), [Keys.dashboardPort], String(bad))
      assert.match(p.problems[0]?.message ?? '', /^goalSwarm\.dashboard\.port: .*using 0$/)
      assert.equal(p.settings.dashboardPort, 0)
    }
  })

  it('the CLI refuses an anthropic executor without a key in its environment, naming --llm (the supervisor does not restart exit 2)', () => {
    const { io: cliIo, err } = io()
    const r = parseCli(peerArgv(spec({ role: 'executor', llm: { provider: 'anthropic', model: null, baseUrl: null } })), cliIo)
    assert.deepEqual(r, { kind: 'exit', code: 2 })
    assert.match(err.join(''), /--llm/)
    // an observer needs no key
    assert.equal(parseCli(peerArgv(spec({ llm: { provider: 'anthropic', model: null, baseUrl: null } })), io().io).kind, 'run')
  })

  it('helpers dial the main peer on loopback, with its PeerId', () => {
    assert.deepEqual(loopbackDialAddrs(['/ip4/192.168.1.5/tcp/4100', '/ip4/127.0.0.1/tcp/4100'], PEER_ID), [`/ip4/127.0.0.1/tcp/4100/p2p/${PEER_ID}`])
    assert.deepEqual(loopbackDialAddrs([`/ip4/10.0.0.2/tcp/1/p2p/${PEER_ID}`], PEER_ID), [`/ip4/10.0.0.2/tcp/1/p2p/${PEER_ID}`])
  })

  it('helpers also dial every peer the editor was connected to, each address once', () => {
    const other = '/ip4/127.0.0.1/tcp/4200/p2p/12D3KooWLLqeUgzyvjeKfnb7Ce6Ma9WGX9Z851qdkSx9PGf6Murd'
    assert.deepEqual(helperBootstrap(['/ip4/127.0.0.1/tcp/4100'], PEER_ID, [other, other]), [`/ip4/127.0.0.1/tcp/4100/p2p/${PEER_ID}`, other])
    assert.deepEqual(helperBootstrap(['/ip4/127.0.0.1/tcp/4100'], PEER_ID, []), [`/ip4/127.0.0.1/tcp/4100/p2p/${PEER_ID}`])
  })

  it('the ports a peer child listens on are never auto-forwarded: remote.portsAttributes matches its command line', () => {
    const pkg = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { contributes: { configurationDefaults: Record<string, Record<string, { onAutoForward?: string }>> } }
    const attrs = Object.entries(pkg.contributes.configurationDefaults['remote.portsAttributes'] ?? {})
    assert.equal(attrs.length, 1)
    const [key, value] = attrs[0] as [string, { onAutoForward?: string }]
    assert.equal(value.onAutoForward, 'ignore')
    // The workbench tests a key that is no port or range as a RegExp against the listening process's
    // command line: /proc/<pid>/cmdline as read, its arguments separated by NUL (spaces in other sources).
    const re = new RegExp(key)
    const argv = peerArgv(spec({ dashboardPort: 0, bootstrap: [`/ip4/127.0.0.1/tcp/4100/p2p/${PEER_ID}`] }))
    for (const script of ['/home/u/.local/share/code-server/extensions/goal-swarm.goal-swarm-0.1.0/dist/peer.js', 'C:\\Users\\u\\.vscode\\extensions\\goal-swarm-0.1.0\\dist\\peer.js']) {
      assert.match([process.execPath, script, ...argv].join('\0'), re)
      assert.match([process.execPath, script, ...argv].join(' '), re)
    }
    assert.doesNotMatch(`${process.execPath} /usr/lib/code-server/out/node/entry.js --bind-addr 127.0.0.1:8080`, re)
    assert.doesNotMatch(`${process.execPath}\0/work/app/dist/server.js\0--port\u00003000`, re)
    assert.doesNotMatch(`${process.execPath}\0/work/app/dist/peer.jsx\0--role\0web`, re)
  })
})

describe('peer supervision policy', () => {
  it('backs off exponentially from 1 s, capped at 30 s; gives up after 4 crashes in 5 minutes', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 9].map((n) => backoffDelay(n)), [1000, 2000, 4000, 8000, 16000, 30000, 30000])
    assert.deepEqual([DEFAULT_RESTART_POLICY.maxCrashes, DEFAULT_RESTART_POLICY.windowMs], [4, 300_000])
  })
})

describe('status bar', () => {
  const base: PeersSnapshot = { phase: 'running', role: 'observer', peerId: PEER_ID, swarm: 'default', connectedPeers: 6, listen: ['/ip4/127.0.0.1/tcp/4100'], failure: null, contributing: null, localSwarmPeers: 6, drops: { invalid_schema: 2, duplicate: 0 }, unreachable: [] }

  it('shows role and connected peers, and the executor when this editor contributes one', () => {
    const m = statusBarModel(base)
    assert.equal(m.text, '$(broadcast) observer · 6 peers')
    assert.equal(m.error, false)
    assert.match(m.tooltip, new RegExp(`PeerId: \`${PEER_ID}\``))
    assert.match(m.tooltip, /Contributing an executor: no/)
    assert.match(m.tooltip, /Dropped messages: invalid_schema 2$/m)
    const c = statusBarModel({ ...base, connectedPeers: 1, contributing: ['can_write_text', 'can_run_code'] })
    assert.equal(c.text, '$(broadcast) observer · 1 peer · $(run) executor')
    assert.match(c.tooltip, /Contributing an executor: yes \(can_write_text, can_run_code\)/)
  })

  it('a failed peer turns the item red and puts the reason in the tooltip', () => {
    const m = statusBarModel({ ...base, phase: 'failed', failure: 'peer main crashed 4 times within 5 min' })
    assert.equal(m.text, '$(error) Goal Swarm: peer failed')
    assert.equal(m.error, true)
    assert.match(m.tooltip, /crashed 4 times within 5 min/)
  })
})
