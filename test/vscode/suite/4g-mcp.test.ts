import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import { readFileSync, statSync } from 'node:fs'
import * as path from 'node:path'
import * as vscode from 'vscode'
import type { ReadyInfo } from '../../../src/extension/peerProcess'
import { planProgress } from '../../../src/plan/read/tree'
import { statusWord } from '../../../src/plan/read/statusWords'
import { demoResponder, LlmStandin, type StandinReply, type StandinRequest } from '../../support/llm-standin'
import { alive, api, applySettings, EXTENSION_ID, leaves, rootById, TEST_SETTINGS, until, waitForPlan, withShownMessages } from './helpers'

const GOAL5 = 'Collect the travel facts for a week in Kyoto'
/** The demo server's fixed answer to travel_facts {city: "Kyoto"} (scripts/mcp-travel-facts.mjs). */
const KYOTO = 'Travel facts for Kyoto: country Japan; currency JPY; time zone Asia/Tokyo; Shinkansen from Tokyo: 2 h 15 min, 14170 JPY; best months April, November.'
/** An environment value of the server: it belongs in the servers file only. */
const SECRET = 'facts-token-kept-out-of-logs'

/**
 * A model that plans like the offline demo but marks every prompt can_query_api, and in a
 * tool-use turn asks for travel_facts on Kyoto, then answers quoting what the tool returned.
 */
function toolModel (req: StandinRequest): StandinReply | Promise<StandinReply> {
  if (req.tools.length > 0) {
    if (req.toolResults.length === 0) return { toolCalls: [{ name: 'travel__travel_facts', input: { city: 'Kyoto' } }] }
    return { text: `From the travel tool:\n\n${req.toolResults.map((r) => r.content).join('\n')}` }
  }
  if (req.purpose !== 'score') return demoResponder(req)
  return Promise.resolve(demoResponder(req)).then((reply) => {
    for (const s of (reply as { json: { subgoals: { required_capability: string }[] } }).json.subgoals) s.required_capability = 'can_query_api'
    return reply
  })
}

/** The command line of a running process (Linux /proc). */
function cmdline (pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
}

suite('Goal Swarm: the executors\' MCP servers from goalSwarm.executor.mcpServers (real OpenAI SDK against the LLM stand-in)', () => {
  let llm: LlmStandin
  let script = ''

  suiteSetup(async function () {
    this.timeout(60_000)
    const a = await api()
    const ext = vscode.extensions.getExtension(EXTENSION_ID)
    assert.ok(ext)
    script = path.join(ext.extensionPath, 'scripts', 'mcp-travel-facts.mjs')
    // The earlier files' peers would claim the prompts without tools.
    await a.peers.stopContributing()
    await a.peers.stopLocalSwarm()
    llm = await LlmStandin.start()
    llm.respondWith(toolModel)
    await applySettings({ ...TEST_SETTINGS, 'goalSwarm.maxDepth': 1, 'goalSwarm.llm.provider': 'openai-compatible', 'goalSwarm.llm.baseUrl': llm.openaiBaseUrl, 'goalSwarm.llm.model': 'standin-model' })
    await until(() => a.settings.current().llmBaseUrl === llm.openaiBaseUrl && a.settings.current().maxDepth === 1, 10_000, 'the LLM settings read')
  })

  suiteTeardown(async function () {
    this.timeout(120_000)
    const a = await api()
    await a.peers.stopContributing()
    await a.peers.stopLocalSwarm()
    await applySettings({ ...TEST_SETTINGS, 'goalSwarm.llm.baseUrl': undefined, 'goalSwarm.llm.model': undefined, 'goalSwarm.executor.mcpServers': undefined, 'goalSwarm.executor.mcpAllow': undefined })
    await until(() => a.settings.current().llmProvider === 'offline-demo' && a.settings.current().maxDepth === 2, 10_000, 'the offline demo model set again')
    await llm.close()
  })

  test('Contribute Executor with a server from user settings: a can_query_api prompt calls its tool, and the result document shows the tool\'s output', async function () {
    this.timeout(360_000)
    const a = await api()
    await applySettings({
      'goalSwarm.executor.mcpServers': { travel: { command: 'node', args: [script], env: { FACTS_TOKEN: SECRET } } },
      'goalSwarm.executor.mcpAllow': ['travel/travel_facts']
    })
    const info = await vscode.commands.executeCommand<ReadyInfo>('goalSwarm.contributeExecutor', ['can_write_text', 'can_query_api'])
    assert.ok(info)
    const pid = a.peers.contributor?.pid
    assert.ok(pid !== undefined && alive(pid), 'the contributed executor runs')
    // Its servers file: in the extension's storage, readable by this user only, holding the environment value.
    const file = a.peers.contributor?.process?.spec.mcpConfig
    assert.ok(file !== undefined && file.startsWith(a.storageDir + path.sep), `servers file ${String(file)} under the extension's storage`)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), { mcpServers: { travel: { command: 'node', args: [script], env: { FACTS_TOKEN: SECRET } } } })
    const argv = cmdline(pid)
    assert.deepEqual(argv.slice(argv.indexOf('--mcp-config'), argv.indexOf('--mcp-config') + 4), ['--mcp-config', file, '--mcp-allow', 'travel/travel_facts'])
    assert.ok(!argv.join(' ').includes(SECRET), 'the environment value is not on the command line')
    await waitForPlan(a, () => a.model.livePeers().some((p) => p.peer_id === info.peerId && p.capabilities.includes('can_query_api')), 60_000, 'the executor to announce can_query_api')

    const members = await vscode.commands.executeCommand<ReadyInfo[]>('goalSwarm.startLocalSwarm', { decomposers: 2, scorers: 2, executors: 0 })
    assert.ok(Array.isArray(members) && members.length === 4)
    const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: GOAL5, ifNoWorkers: 'submit', progress: false })
    assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
    await waitForPlan(a, () => {
      const r = rootById(a, goalId)
      return r !== undefined && planProgress(r).complete && r.synthesis?.status === 'done'
    }, 300_000, 'the plan of can_query_api prompts and its final answer to be done')
    const root = rootById(a, goalId)
    assert.ok(root)
    const ls = leaves(root)
    assert.ok(ls.length >= 2, `${ls.length} prompts`)
    for (const l of ls) {
      assert.equal(l.required_capability, 'can_query_api')
      assert.equal(l.status, 'done')
      assert.equal(l.executor, info.peerId, `"${l.text}" run by this editor's executor`)
      // The model's answer quotes the tool, and the executor's trace shows the real call.
      assert.ok(l.output?.includes(`From the travel tool:\n\n${KYOTO}`), l.output ?? '')
      assert.match(l.output ?? '', /\n### Tool calls\n1\. `travel__travel_facts` \{"city":"Kyoto"\} \(\d+ ms\)\n {3}> Travel facts for Kyoto: /)
    }
    // The tool's answer reached the model through the executor, one call per prompt.
    const answered = llm.requests.filter((r) => r.toolResults.some((t) => t.content === KYOTO && !t.isError))
    assert.ok(answered.length >= ls.length, `${answered.length} tool answers for ${ls.length} prompts`)
    assert.ok(llm.requests.filter((r) => r.tools.length > 0).every((r) => r.tools.join() === 'travel__travel_facts'), '--mcp-allow kept the one tool')

    const leaf = ls[0]
    assert.ok(leaf)
    const uri = await vscode.commands.executeCommand<string>('goalSwarm.openResult', leaf.id)
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri)
    assert.ok(doc)
    const text = doc.getText()
    assert.ok(text.includes(`| ${statusWord('done')} | \`can_query_api\` | \`this editor's executor\` | \`${leaf.id}\` |`), 'the header names the capability and the executor')
    assert.ok(text.includes(KYOTO), text)
    assert.ok(text.includes('### Tool calls\n1. `travel__travel_facts` {"city":"Kyoto"}'), text)
    await vscode.commands.executeCommand('workbench.action.closeAllEditors')
  })

  test('a bad entry in goalSwarm.executor.mcpServers is reported naming the setting, the server and the field, and Contribute Executor starts with the other servers', async function () {
    this.timeout(120_000)
    const a = await api()
    await a.peers.stopContributing()
    await applySettings({ 'goalSwarm.executor.mcpServers': { travel: { command: 'node', args: [script], env: { FACTS_TOKEN: SECRET } }, remote: { command: 'node', url: 'http://127.0.0.1:1/mcp' } } })
    const { value: info, warning, error } = await withShownMessages(() => Promise.resolve(vscode.commands.executeCommand<ReadyInfo>('goalSwarm.contributeExecutor', ['can_write_text', 'can_query_api'])))
    assert.ok(info, 'the executor started')
    assert.deepEqual(warning, ['Goal Swarm: invalid setting goalSwarm.executor.mcpServers (user settings): server "remote": has both "command" and "url"; give one (a local command, or the URL of a server over HTTP); the executors start without that server.'])
    assert.deepEqual(error, [])
    const pid = a.peers.contributor?.process?.spec.mcpConfig === undefined ? undefined : a.peers.contributor.pid
    assert.ok(pid !== undefined && alive(pid), 'the contributed executor runs with a servers file')
    const file = a.peers.contributor?.process?.spec.mcpConfig ?? ''
    assert.deepEqual(Object.keys((JSON.parse(readFileSync(file, 'utf8')) as { mcpServers: Record<string, unknown> }).mcpServers), ['travel'], 'only the good server is in its servers file')
    assert.equal(cmdline(pid).includes('--mcp-config'), true)
    await waitForPlan(a, () => a.model.livePeers().some((p) => p.peer_id === info.peerId), 60_000, 'the executor\'s announcement')
  })
})
