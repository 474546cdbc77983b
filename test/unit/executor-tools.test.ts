import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { consentQuestion, ExecutorTools, MCP_CONSENT_KEY, type AnswerStore } from '../../src/extension/executorTools'
import type { ComponentLog } from '../../src/extension/log'
import type { ScopedValues } from '../../src/extension/mcpSettings'
import type { McpServerConfig } from '../../src/peer/tools/mcpConfig'

const SECRET = 'secret-token-in-env'
const travel = { command: 'node', args: ['/opt/facts.mjs'], env: { FACTS_TOKEN: SECRET } }
const web = { url: 'https://tools.example/mcp', headers: { Authorization: `Bearer ${SECRET}` } }

/** ExecutorTools over a temp storage dir, an in-memory answer store and a scripted question. */
function setup (values: ScopedValues, answers: Array<boolean | undefined> = [], trusted = true) {
  const storageDir = mkdtempSync(path.join(tmpdir(), 'executor-tools-'))
  const lines: string[] = []
  const warned: string[] = []
  const asked: string[][] = []
  const store = new Map<string, unknown>()
  const state: AnswerStore = {
    get: <T>(key: string, def: T): T => (store.has(key) ? store.get(key) as T : def),
    update: (key, value) => { store.set(key, value); return Promise.resolve() }
  }
  const log: ComponentLog = { trace: (m) => lines.push(m), debug: (m) => lines.push(m), info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) }
  const current = { values, trusted }
  const tools = new ExecutorTools({
    log,
    read: () => current,
    storageDir,
    state,
    warn: (m) => warned.push(m),
    // Answers after a turn of the event loop, as a dialog does, so concurrent launches overlap.
    ask: (servers: readonly McpServerConfig[]) => { asked.push(servers.map((s) => s.name)); return new Promise((resolve) => setImmediate(() => resolve(answers.shift()))) }
  })
  return { tools, storageDir, lines, warned, asked, store, current }
}

describe('the executors\' MCP servers in the editor (executorTools.ts)', () => {
  it('user servers: a 0600 servers file in the storage dir, --mcp-allow from the setting, no question; logs name commands only', async () => {
    const t = setup({ globalValue: { travel, web } })
    const fields = await t.tools.launchFields('editor-executor-1', ['travel/*'])
    const file = path.join(t.storageDir, 'mcp', 'editor-executor-1.json')
    assert.deepEqual(fields, { mcpConfig: file, mcpAllow: ['travel/*'] })
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700)
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { mcpServers: { travel, web } })
    assert.deepEqual(t.asked, [])
    assert.deepEqual(t.lines, ['executor editor-executor-1 gets MCP servers travel: node /opt/facts.mjs; web: https://tools.example/mcp (tools travel/*)'])
    assert.deepEqual(await t.tools.launchFields('editor-executor-1', []), { mcpConfig: file }, '[] allows every tool')
    assert.ok(!t.lines.join('\n').includes(SECRET))
  })

  it('servers from workspace settings: asked once for executors starting together, Allow remembered for that exact configuration', async () => {
    const t = setup({ globalValue: { travel }, workspaceValue: { web } }, [true, false])
    const [a, b] = await Promise.all([t.tools.launchFields('local-executor-1', []), t.tools.launchFields('local-executor-2', [])])
    assert.deepEqual(t.asked, [['web']])
    for (const f of [a, b]) assert.deepEqual(Object.keys(JSON.parse(readFileSync(f.mcpConfig ?? '', 'utf8')).mcpServers), ['travel', 'web'])
    await t.tools.launchFields('local-executor-1', [])
    assert.deepEqual(t.asked, [['web']], 'the answer is remembered')
    assert.deepEqual(Object.values(t.store.get(MCP_CONSENT_KEY) as Record<string, boolean>), [true])
    // Another URL is another configuration: asked again, and this time refused.
    t.current.values = { globalValue: { travel }, workspaceValue: { web: { ...web, url: 'https://other.example/mcp' } } }
    const refused = await t.tools.launchFields('local-executor-1', [])
    assert.deepEqual(t.asked, [['web'], ['web']])
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(refused.mcpConfig ?? '', 'utf8')).mcpServers), ['travel'], 'Don\'t Allow: the user\'s servers only')
    assert.ok(t.lines.includes('MCP servers "web" from the workspace settings are not started: you chose "Don\'t Allow" (changing goalSwarm.executor.mcpServers asks again)'), t.lines.join('\n'))
    assert.ok(!t.lines.join('\n').includes(SECRET))
  })

  it('Don\'t Allow is remembered and said in the log; a dismissed question is asked again at the next start', async () => {
    const t = setup({ workspaceValue: { web } }, [undefined, false])
    assert.deepEqual(await t.tools.launchFields('e', []), {})
    assert.ok(t.lines.includes('MCP servers "web" from the workspace settings are not started this time: the question was dismissed (it is asked again at the next start)'))
    assert.equal(t.store.get(MCP_CONSENT_KEY), undefined)
    assert.deepEqual(await t.tools.launchFields('e', []), {})
    assert.deepEqual(await t.tools.launchFields('e', []), {})
    assert.equal(t.asked.length, 2, 'asked after the dismissal, not after Don\'t Allow')
    assert.ok(t.lines.includes('MCP servers "web" from the workspace settings are not started: you chose "Don\'t Allow" for them (changing goalSwarm.executor.mcpServers asks again)'))
  })

  it('an untrusted workspace runs the user\'s servers without asking and logs the ones it leaves out', async () => {
    const t = setup({ globalValue: { travel }, workspaceValue: { web } }, [], false)
    const f = await t.tools.launchFields('e', [])
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(f.mcpConfig ?? '', 'utf8')).mcpServers), ['travel'])
    assert.deepEqual(t.asked, [])
    assert.ok(t.lines.includes('MCP servers "web" from the workspace settings are left out: this workspace is not trusted (Restricted Mode)'))
  })

  it('a bad entry is shown once naming the setting, the server and the field; the executor gets the other servers, and with none left a servers file from before is removed', async () => {
    const t = setup({ globalValue: { travel } })
    const before = await t.tools.launchFields('e', [])
    assert.ok(before.mcpConfig !== undefined && existsSync(before.mcpConfig))
    const why = 'goalSwarm.executor.mcpServers (user settings): server "travel": has both "command" and "url"; give one (a local command, or the URL of a server over HTTP); the executors start without that server'
    t.current.values = { globalValue: { travel: { ...travel, url: 'http://127.0.0.1:1/mcp' }, web } }
    const withWeb = await t.tools.launchFields('e', [])
    assert.ok(withWeb.mcpConfig !== undefined)
    assert.deepEqual(Object.keys((JSON.parse(readFileSync(withWeb.mcpConfig, 'utf8')) as { mcpServers: Record<string, unknown> }).mcpServers), ['web'])
    t.current.values = { globalValue: { travel: { ...travel, url: 'http://127.0.0.1:1/mcp' } } }
    assert.deepEqual(await t.tools.launchFields('e', ['travel/*']), {})
    assert.deepEqual(await t.tools.launchFields('e', []), {})
    assert.deepEqual(t.warned, [why])
    assert.equal(existsSync(before.mcpConfig), false)
    assert.ok(!t.warned.join('\n').includes(SECRET))
  })

  it('the question lists each server with its command or URL and none of its environment or headers', () => {
    const q = consentQuestion([{ name: 'travel', kind: 'stdio', ...travel }, { name: 'web', kind: 'http', ...web }])
    assert.equal(q.message, 'Goal Swarm: this workspace\'s settings (goalSwarm.executor.mcpServers) start 2 MCP servers for this editor\'s executors. Allow them?')
    assert.match(q.detail, /^travel: node \/opt\/facts\.mjs\nweb: https:\/\/tools\.example\/mcp\n\n/)
    assert.ok(!q.detail.includes(SECRET))
  })
})
