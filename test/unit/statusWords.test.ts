/**
 * One status vocabulary (src/plan/read/statusWords.ts): every goal and task status has one word,
 * and the editor's Plan tree, the observer's terminal tree, the report and the dashboard show
 * that word for the same node.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { dashboardSnapshot, type DashNode } from '../../src/peer/dashboard/snapshot'
import type { GoalStatus, TaskStatus } from '../../src/plan/rules/evaluator'
import { renderReportMarkdown, renderTreeText } from '../../src/plan/read/report'
import { STATUS_WORDS, statusWord } from '../../src/plan/read/statusWords'
import { buildTree, type GoalView, type TreeNode } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { PlanState } from '../../src/plan/state/planState'
import { goalTooltip, leafItem } from '../../src/views/treeItemModel'
import { samplePlan } from '../support/fixtures'

const GOAL_STATUSES: GoalStatus[] = ['pending_decomposition', 'decomposed', 'failed', 'superseded', 'cancelled', 'budget_reached']
const TASK_STATUSES: TaskStatus[] = ['pending_execution', 'claimed', 'done', 'failed', 'capability_gap', 'superseded', 'waiting', 'blocked', 'cancelled', 'budget_reached']

describe('status words', () => {
  it('every goal and task status has one word a person reads, and no two statuses of a kind share one', () => {
    assert.deepEqual(Object.keys(STATUS_WORDS).sort(), [...new Set([...GOAL_STATUSES, ...TASK_STATUSES])].sort())
    for (const [status, word] of Object.entries(STATUS_WORDS)) assert.match(word, /^[a-z]+( [a-z]+)*$/, `${status}: "${word}"`)
    for (const kind of [GOAL_STATUSES, TASK_STATUSES]) assert.equal(new Set(kind.map(statusWord)).size, kind.length, kind.join(', '))
  })

  it('the Plan tree, the terminal tree, the report and the dashboard show the same word for each node', () => {
    const plan = samplePlan()
    const state = new PlanState(plan.envelopes)
    const [root] = buildTree(state, { nowUs: plan.nowUs, rules: DEFAULT_RULES })
    assert.ok(root)
    const dash = dashboardSnapshot({
      state, nowUs: plan.nowUs, rules: DEFAULT_RULES,
      self: { peer_id: 'peer-obs', role: 'observer', swarm: 'default' }, booted_at_ms: 1, connected_peers: 0, drops: {}, flow: []
    }).plans[0]!.root
    const dashWords = new Map<string, string>()
    const walkDash = (n: DashNode): void => { dashWords.set(n.id, n.status_word); if (n.kind === 'goal') n.children.forEach(walkDash) }
    walkDash(dash)
    const terminal = renderTreeText([root])
    const report = renderReportMarkdown([root], { generatedAt: 'now' })
    const seen = new Set<string>()
    const walk = (n: TreeNode): void => {
      const word = statusWord(n.status)
      seen.add(n.status)
      assert.equal(dashWords.get(n.id), word, `dashboard, ${n.text}`)
      if (n.kind === 'goal') {
        assert.ok(goalTooltip(n).split('\n')[0]?.endsWith(` · ${word}`), `Plan tree tooltip, ${n.text}`)
        assert.ok(terminal.includes(`${n.text} [${word}`), `terminal, ${n.text}`)
        assert.ok(report.includes(`${n.text} — *${word}`), `report, ${n.text}`)
        n.children.forEach(walk)
      } else {
        assert.ok(leafItem(n).description.startsWith(word), `Plan tree row, ${n.text}`)
        assert.ok(terminal.includes(`${n.text} [${word}`), `terminal, ${n.text}`)
        assert.ok(report.includes(`${n.text} — *${word}*`), `report, ${n.text}`)
      }
    }
    walk(root as GoalView)
    assert.deepEqual([...seen].sort(), ['capability_gap', 'decomposed', 'done', 'pending_execution'])
  })
})
