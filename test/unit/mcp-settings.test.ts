import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { parseCli } from '../../src/peer/cli'
import { peerArgv } from '../../src/peer/ipc/argv'
import { mcpConfigValue, McpConfigError, parseMcpConfig, parseMcpServers } from '../../src/peer/tools/mcpConfig'
import { chooseMcpServers, consentKey, MCP_SERVERS_SETTING, serverLines, serversToRun } from '../../src/extension/mcpSettings'
import { Keys, readSettings, type SettingKey } from '../../src/extension/settings'

const travel = { command: 'node', args: ['/opt/facts.mjs'], env: { FACTS_TOKEN: 'secret-token-1' } }
const remote = { url: 'http://127.0.0.1:8931/mcp', headers: { Authorization: 'Bearer secret-token-2' } }

describe('goalSwarm.executor.mcpServers: which servers the executors run', () => {
  it('user settings run without a question; the entries are checked by the servers file rule', () => {
    const c = chooseMcpServers({ globalValue: { travel, remote } }, true)
    assert.deepEqual(c.problems, [])
    assert.deepEqual(c.servers.map((s) => s.name), ['travel', 'remote'])
    assert.deepEqual(c.needConsent, [])
    assert.deepEqual(c.untrusted, [])
    assert.deepEqual(c.servers, parseMcpConfig({ mcpServers: { travel, remote } }, 'mcp.json'))
  })

  it('servers workspace or folder settings add or change need consent in a trusted workspace; the user\'s own entry repeated does not', () => {
    const c = chooseMcpServers({
      globalValue: { travel, remote },
      workspaceValue: { travel: { command: 'node', args: ['/opt/other.mjs'] }, web: { url: 'https://tools.example/mcp' } },
      workspaceFolderValue: { remote: { ...remote } }
    }, true)
    assert.deepEqual(c.problems, [])
    assert.deepEqual(c.servers.map((s) => [s.name, s.kind === 'stdio' ? s.args.join(' ') : s.url]), [['travel', '/opt/other.mjs'], ['remote', remote.url], ['web', 'https://tools.example/mcp']])
    assert.deepEqual(c.needConsent.map((s) => s.name), ['travel', 'web'])
    assert.deepEqual(serversToRun(c, false).map((s) => s.name), ['remote'], 'Don\'t Allow keeps the user\'s servers only')
    assert.deepEqual(serversToRun(c, true).map((s) => s.name), ['travel', 'remote', 'web'])
  })

  it('an untrusted workspace runs the user\'s servers only and names the ones it leaves out; its bad entries are not even read', () => {
    const c = chooseMcpServers({ globalValue: { travel }, workspaceValue: { travel: { command: 'evil' }, web: { url: 'nope' } } }, false)
    assert.deepEqual(c.problems, [])
    assert.deepEqual(c.servers.map((s) => [s.name, s.kind === 'stdio' ? s.command : '']), [['travel', 'node']])
    assert.deepEqual(c.needConsent, [])
    assert.deepEqual(c.untrusted, ['travel', 'web'])
    assert.deepEqual(chooseMcpServers({ globalValue: { travel }, workspaceValue: { travel } }, false).untrusted, [], 'the user\'s own entry is not left out')
  })

  it('a bad entry names the setting, the settings level, the server and the field, and only that server is left out', () => {
    const problem = (values: Parameters<typeof chooseMcpServers>[0], running: string[] = []): string | null => {
      const c = chooseMcpServers(values, true)
      assert.deepEqual(c.servers.map((s) => s.name), running, 'the servers that still run')
      assert.ok(c.problems.length <= 1, c.problems.join('\n'))
      return c.problems[0] ?? null
    }
    assert.equal(problem({ globalValue: { travel, both: { command: 'node', url: 'http://127.0.0.1:1/mcp' } } }, ['travel']),
      `${MCP_SERVERS_SETTING} (user settings): server "both": has both "command" and "url"; give one (a local command, or the URL of a server over HTTP); the executors start without that server`)
    // A bad workspace entry for a name the user also defines leaves that name out altogether, not the user's entry in its place.
    assert.match(problem({ globalValue: { travel, remote }, workspaceValue: { travel: { command: 'node', env: { TOKEN: 7 } } } }, ['remote']) ?? '',
      /^goalSwarm\.executor\.mcpServers \(workspace settings\): server "travel": "env\.TOKEN": .*string.*; the executors start without that server$/)
    assert.match(problem({ workspaceFolderValue: { 'a b': { command: 'x' } } }) ?? '', /^goalSwarm\.executor\.mcpServers \(folder settings\): server "a b": the name must be/)
    assert.equal(problem({ globalValue: ['travel'], workspaceValue: { remote } }, ['remote']), `${MCP_SERVERS_SETTING} (user settings): expected an object of servers by name, {"<name>": {"command": ...} or {"url": ...}}; no server of these settings runs`)
    assert.match(problem({ globalValue: { travel: { ...travel, cwd: '/tmp' } } }) ?? '', /server "travel": unknown field "cwd"; the executors start without that server$/)
    // Secrets stay out of every message.
    const withSecret = problem({ globalValue: { travel: { command: 'node', env: { TOKEN: 'secret-token-3', N: 1 } } } }) ?? ''
    assert.ok(withSecret !== '' && !withSecret.includes('secret-token-3'), withSecret)
    assert.equal(problem({}), null)
    assert.deepEqual(chooseMcpServers({ globalValue: {} }, true).servers, [])
  })

  it('parseMcpServers takes the in-memory map, with the file\'s messages', () => {
    assert.deepEqual(parseMcpServers({ travel }, 'here'), [{ name: 'travel', kind: 'stdio', ...travel }])
    assert.throws(() => parseMcpServers({ x: { url: 'ftp://a' } }, 'here'), (e: unknown) => e instanceof McpConfigError && /^here: server "x": "url": /.test(e.message))
  })

  it('the consent is remembered per exact configuration: any change to a server asks again', () => {
    const servers = parseMcpServers({ travel, remote }, 'x')
    const key = consentKey(servers)
    assert.match(key, /^[0-9a-f]{64}$/)
    assert.equal(consentKey([...servers].reverse()), key, 'order does not matter')
    assert.equal(consentKey(parseMcpServers({ travel: { ...travel, env: { FACTS_TOKEN: 'secret-token-1' } }, remote }, 'y')), key)
    for (const changed of [
      { travel: { ...travel, args: ['/opt/facts.mjs', '--x'] } },
      { travel: { ...travel, env: { FACTS_TOKEN: 'other' } } },
      { travel: { ...travel, command: 'nodejs' } },
      { travel2: travel }
    ]) assert.notEqual(consentKey(parseMcpServers({ ...changed, remote }, 'z')), key, JSON.stringify(changed))
    assert.notEqual(consentKey(parseMcpServers({ travel, remote: { ...remote, headers: {} } }, 'z')), key)
  })

  it('the question and the log name each server with its command or URL, never its environment or headers', () => {
    const lines = serverLines(parseMcpServers({ travel, remote }, 'x'))
    assert.deepEqual(lines, ['travel: node /opt/facts.mjs', 'remote: http://127.0.0.1:8931/mcp'])
    assert.ok(!lines.join('\n').includes('secret'))
    assert.equal(serverLines(parseMcpServers({ long: { command: 'x', args: ['a'.repeat(500)] } }, 'x'))[0]?.length, 200)
  })
})

describe('goalSwarm.executor.mcpAllow and the executor\'s command line', () => {
  const reader = (values: Partial<Record<SettingKey, unknown>>) => ({ baseDir: '/ws', get: (k: SettingKey) => values[k] })

  it('takes server/tool and server/* entries; a bad one names the setting and falls back to every tool', () => {
    assert.deepEqual(readSettings(reader({})).settings.mcpAllow, [])
    const ok = readSettings(reader({ [Keys.mcpAllow]: ['travel/travel_facts', 'remote/*', 'travel/travel_facts'] }))
    assert.deepEqual(ok.problems, [])
    assert.deepEqual(ok.settings.mcpAllow, ['travel/travel_facts', 'remote/*'])
    const bad = readSettings(reader({ [Keys.mcpAllow]: ['travel/clock', 'travel'] }))
    assert.deepEqual(bad.problems.map((p) => p.key), [Keys.mcpAllow])
    assert.equal(bad.problems[0]?.message, 'goalSwarm.executor.mcpAllow: "travel" is not server/tool (or server/*), with the server\'s name from goalSwarm.executor.mcpServers (item 1); got ["travel/clock","travel"], using []')
    assert.deepEqual(bad.settings.mcpAllow, [])
  })

  it('an executor gets --mcp-config and --mcp-allow, which the peer CLI reads back; other roles get neither', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcp-settings-'))
    const file = path.join(dir, 'servers.json')
    const servers = parseMcpServers({ travel, remote }, 'x')
    writeFileSync(file, JSON.stringify(mcpConfigValue(servers)))
    const base = { identity: 'e', dataDir: path.join(dir, 'data'), identityDir: path.join(dir, 'ids'), llm: { provider: 'offline-demo' as const }, mcpConfig: file }
    const args = peerArgv({ role: 'executor', ...base, mcpAllow: ['travel/travel_facts', 'remote/*'] })
    assert.deepEqual(args.slice(args.indexOf('--mcp-config'), args.indexOf('--mcp-config') + 4), ['--mcp-config', file, '--mcp-allow', 'travel/travel_facts,remote/*'])
    const r = parseCli(args, { out: () => {}, err: () => {}, env: {} })
    assert.ok(r.kind === 'run')
    assert.deepEqual(r.config.mcp?.servers, servers, 'the file the editor writes parses back to the same servers')
    assert.deepEqual(r.config.mcp?.allow, ['travel/travel_facts', 'remote/*'])
    assert.equal(peerArgv({ role: 'executor', ...base, mcpAllow: [] }).includes('--mcp-allow'), false, '[] is every tool')
    assert.equal(peerArgv({ role: 'scorer', ...base }).includes('--mcp-config'), false)
  })
})
