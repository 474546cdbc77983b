import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { autoProviderNotice, AutoProviderNotices, readResolution, type AutoResolution } from '../../src/extension/autoProvider'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { planJson, planMarkdown, planPeers } from '../../src/views/planExport'
import { samplePlan } from '../support/fixtures'

const chat: AutoResolution = { provider: 'vscode-lm', model: 'copilot/gpt-4o', modelName: 'GPT-4o' }
const demo: AutoResolution = { provider: 'offline-demo', model: null }
const anthropic: AutoResolution = { provider: 'anthropic', model: null }

describe('what goalSwarm.llm.provider "auto" resolves to, said once per change', () => {
  it('a first resolution to a model that may cost money or quota is said; the offline demo model is not', () => {
    assert.equal(autoProviderNotice(null, demo), null)
    assert.equal(autoProviderNotice(null, anthropic), 'Goal Swarm: goalSwarm.llm.provider "auto" now runs the peers on Anthropic (a paid API), because an Anthropic API key is stored. Set goalSwarm.llm.provider to choose the provider yourself.')
    assert.equal(autoProviderNotice(null, chat), 'Goal Swarm: goalSwarm.llm.provider "auto" now runs the peers on the VS Code chat model "GPT-4o" (copilot/gpt-4o), because no Anthropic API key is stored and VS Code has a chat model. Set goalSwarm.llm.provider to choose the provider yourself.')
  })

  it('a change names what it was before; the same provider and model again says nothing', () => {
    assert.equal(autoProviderNotice(chat, { ...chat, modelName: 'GPT-4o (renamed)' }), null)
    assert.match(autoProviderNotice(chat, demo) ?? '', /now runs the peers on the offline demo model \(synthetic text, no LLM is called\), because no Anthropic API key is stored and VS Code has no chat model \(before: the VS Code chat model "GPT-4o" \(copilot\/gpt-4o\)\)\./)
    assert.match(autoProviderNotice(chat, { ...chat, model: 'copilot/claude', modelName: 'Claude' }) ?? '', /"Claude" \(copilot\/claude\).*\(before: the VS Code chat model "GPT-4o"/)
  })

  it('a swarm of launches reporting at once tells it once, and the record outlives the editor', async () => {
    const stored = new Map<string, unknown>()
    const store = { get: <T>(k: string) => stored.get(k) as T | undefined, update: async (k: string, v: unknown) => { stored.set(k, v) } }
    const shown: string[] = []
    const notices = new AutoProviderNotices(store, async (m) => { shown.push(m); return undefined }, () => {}, { info: () => {} })
    for (let i = 0; i < 6; i++) notices.observe(chat)
    assert.equal(shown.length, 1)
    assert.deepEqual(readResolution(store), chat)
    // The next editor reads the record: the same outcome says nothing, a change is said.
    const next = new AutoProviderNotices(store, async (m) => { shown.push(m); return undefined }, () => {}, { info: () => {} })
    next.observe(chat)
    assert.equal(shown.length, 1)
    next.observe(demo)
    assert.equal(shown.length, 2)
    assert.equal(readResolution({ get: <T>() => ({ provider: 'gemini', model: null }) as T, update: async () => {} }), null, 'an unknown provider reads as none')
  })
})

describe('Export Plan names peers and lists their PeerIds once', () => {
  const plan = samplePlan()
  const [root] = buildTree(new PlanState(plan.envelopes), { nowUs: plan.nowUs, rules: DEFAULT_RULES })
  assert.ok(root)
  const names = new Map([['peer-ex-1', 'kyoto-box'], ['peer-sc-1', 'local-scorer-1']])
  const label = (p: string): string => names.get(p) ?? `…${p.slice(-4)}`

  it('Markdown: the tree by name, then a Peers table of names and PeerIds', () => {
    const peers = planPeers(root)
    assert.ok(peers.includes('peer-ex-1') && peers.length === new Set(peers).size, JSON.stringify(peers))
    const md = planMarkdown(root, new Map(), label)
    const lines = md.split('\n')
    assert.ok(lines.some((l) => l.includes(', by `kyoto-box`')), md)
    const at = lines.indexOf('## Peers')
    assert.ok(at > lines.indexOf('## Results'))
    assert.deepEqual(lines.slice(at, at + 4), ['## Peers', '', '| Peer | PeerId |', '|---|---|'])
    assert.equal(lines.slice(at + 4).filter((l) => l.startsWith('| ')).length, peers.length)
    assert.ok(lines.includes('| kyoto-box | `peer-ex-1` |'))
    // Outside the table a PeerId shows only as the name it is given.
    assert.ok(lines.slice(0, at).every((l) => !l.includes('`peer-ex-1`')))
  })

  it('JSON: the tree keeps PeerIds, and `peers` maps each to its name', () => {
    const json = JSON.parse(planJson(root, new Map(), label)) as { peers: Record<string, string> }
    assert.equal(json.peers['peer-ex-1'], 'kyoto-box')
    assert.deepEqual(Object.keys(json.peers), planPeers(root))
  })
})
