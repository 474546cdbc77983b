import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PlanState } from '../../src/plan/state/planState'
import { buildTree, type GoalView, type LeafView } from '../../src/plan/read/tree'
import { DEFAULT_RULES } from '../../src/plan/rules/swarmRules'
import { demoteHeadings, mdEscape } from '../../src/plan/read/planMarkdown'
import { renderReportMarkdown, renderTreeText } from '../../src/plan/read/report'
import { resultDamagedText, statusWord as w } from '../../src/plan/read/statusWords'
import { planJson, planMarkdown } from '../../src/views/planExport'
import { leavesOf } from '../../src/views/planModel'
import { lineageOf, resultMarkdown } from '../../src/views/resultText'
import { nodeIdFromPath, resultPath } from '../../src/views/resultUri'
import { accepted, capability, envelopeOf, evidenceOf, promptNode, proposal, rootGoal, samplePlan, sec, T0 } from '../support/fixtures'

const plan = samplePlan()
const [root] = buildTree(new PlanState(plan.envelopes), { nowUs: plan.nowUs, rules: DEFAULT_RULES })
assert.ok(root)
const leaves = leavesOf(root)
const flights = leaves.find((l) => l.text === 'Book flights') as LeafView
const day1 = leaves.find((l) => l.text === 'Day 1: Asakusa and Ueno') as LeafView
const goals = new Map<string, GoalView>([[root.id, root], ...root.children.filter((c): c is GoalView => c.kind === 'goal').map((g) => [g.id, g] as const)])

describe('Export Plan (views)', () => {
  it('Markdown: the report\'s rendering: title, progress, final answer first, the tree with statuses and scores, votes, every result', () => {
    const md = planMarkdown(root)
    const lines = md.split('\n')
    assert.equal(lines[0], '# Plan a two-week trip to Japan')
    assert.equal(lines[2], `Goal \`${root.id}\`: **in progress**, 1 of 4 leaves done, 1 with a capability gap; 0 of 2 goals synthesized.`)
    assert.deepEqual(lines.slice(4, 7), ['## Final answer', '', '_No final answer yet: waiting for "Plan Tokyo days", "Plan Kyoto days"._'])
    const tree = lines.slice(lines.indexOf('## Plan tree') + 2, lines.indexOf('## Accepted splits and votes') - 1)
    assert.deepEqual(tree, [
      `- Plan a two-week trip to Japan — *${w('decomposed')}, score 0.75*, synthesis *${w('waiting')}*`,
      `  - Book flights — *${w('done')}*, needs \`can_write_text\`, by \`peer-ex-1\` (result 1)`,
      `  - Plan Tokyo days — *${w('decomposed')}, score 0.75*, synthesis *${w('waiting')}*`,
      `    - Day 1: Asakusa and Ueno — *${w('pending_execution')}*, needs \`can_write_text\``,
      `    - Day 2: Shibuya and Harajuku — *${w('pending_execution')}*, needs \`can_write_text\``,
      `  - Plan Kyoto days — *${w('capability_gap')}*, needs \`can_query_api\``
    ])
    const results = lines.slice(lines.indexOf('## Results'))
    assert.equal(results.filter((l) => /^\d+\. \*\*/.test(l)).length, 4)
    assert.ok(md.includes(`1. **Book flights** — ${w('done')}, by \`peer-ex-1\`\n\n   > Flights: NRT, 14 days\n`))
    assert.ok(md.includes(`2. **Day 1: Asakusa and Ueno** — ${w('pending_execution')}\n`))
  })

  it('Markdown: a done root synthesis is the final answer at the top', () => {
    const answer = { ...root, synthesis: { ...root.synthesis!, status: 'done' as const, output: 'Go in April.\n\n- Tokyo 5 days', executor: 'peer-ex-2', success: true } }
    const md = planMarkdown(answer)
    const at = md.indexOf('## Final answer')
    assert.ok(at > 0 && at < md.indexOf('## Plan tree'))
    assert.ok(md.includes('## Final answer\n\nGo in April.\n\n- Tokyo 5 days\n\n_Synthesized by `peer-ex-2` from 3 parts._'))
    assert.ok(planMarkdown(answer, new Map([[answer.synthesis.id, 'The whole answer from the blob']])).includes('## Final answer\n\nThe whole answer from the blob'))
  })

  it('Markdown: headings inside the final answer and the results sit below the section they are embedded in', () => {
    const answerText = 'Intro\n\n# Plan\n\n## Week 1\n\n```sh\n# a comment, not a heading\n```\n\nKyoto days\n==========\n\nText\n\n---\n\n###### Deepest'
    const answer = { ...root, synthesis: { ...root.synthesis!, status: 'done' as const, output: answerText, executor: 'peer-ex-2', success: true } }
    // Export Plan: the goal is `#`, "Final answer" `##`, so the answer's headings start at `###`.
    const md = planMarkdown(answer, new Map([[flights.id, '## Outbound\n\nNRT\n\n### Return\n\nHND']]))
    assert.ok(md.includes('## Final answer\n\nIntro\n\n### Plan\n\n#### Week 1\n\n```sh\n# a comment, not a heading\n```\n\n### Kyoto days\n\nText\n\n---\n\n###### Deepest\n'), md)
    assert.ok(md.includes(`1. **Book flights** — ${w('done')}, by \`peer-ex-1\`\n\n   > ### Outbound\n   >\n   > NRT\n   >\n   > #### Return\n   >\n   > HND\n`), md)
    // The report nests one level deeper (the goal is `##`): so does the answer.
    const report = renderReportMarkdown([answer], { generatedAt: 'now' })
    assert.ok(report.includes('### Final answer\n\nIntro\n\n#### Plan\n\n##### Week 1\n'), report)
    // The outline (headings outside code fences, quoted ones too): after "Final answer" the next
    // heading at its level or above is the next section, in either document.
    for (const doc of [md, report]) {
      let fenced = false
      const outline: Array<[number, string]> = []
      for (const l of doc.split('\n')) {
        const line = l.replace(/^ {3}> ?/, '')
        if (line.startsWith('```')) { fenced = !fenced; continue }
        const m = /^(#{1,6}) (.*)$/.exec(line)
        if (!fenced && m !== null) outline.push([m[1]!.length, m[2]!])
      }
      const at = outline.findIndex(([, t]) => t === 'Final answer')
      const level = outline[at]![0]
      assert.deepEqual(outline.slice(at + 1).find(([n]) => n <= level), [level, 'Plan tree'], JSON.stringify(outline))
    }
    assert.equal(demoteHeadings('#### Already deep\n\ntext', 3), '#### Already deep\n\ntext')
    assert.equal(demoteHeadings('- item\n---\n\nNo heading here', 3), '- item\n---\n\nNo heading here')
  })

  it('Markdown uses fetched full outputs of blob results instead of the inline prefix', () => {
    const md = planMarkdown(root, new Map([[flights.id, 'Flights: NRT, 14 days, plus the whole 5 MB appendix']]))
    assert.ok(md.includes('plus the whole 5 MB appendix'))
  })

  it('JSON: the tree and progress, parseable, with full outputs', () => {
    const parsed = JSON.parse(planJson(root, new Map([[flights.id, 'FULL']]))) as { format: string, version: number, progress: { leaves: number, done: number, capability_gap: number, complete: boolean }, goal: GoalView }
    assert.equal(parsed.format, 'goal-swarm-plan')
    assert.equal(parsed.version, 1)
    assert.deepEqual({ leaves: parsed.progress.leaves, done: parsed.progress.done, gap: parsed.progress.capability_gap, complete: parsed.progress.complete }, { leaves: 4, done: 1, gap: 1, complete: false })
    assert.equal(parsed.goal.id, root.id)
    assert.equal(parsed.goal.accepted?.final_score, 0.75)
    const f = parsed.goal.children[0] as LeafView
    assert.equal(f.id, flights.id)
    assert.equal(f.output, 'FULL')
    assert.equal(f.executor, 'peer-ex-1')
  })
})

describe('result documents (views)', () => {
  it('a done result: title, the prompt quoted, the goal lineage, executor and node in the header, then the output', () => {
    const md = resultMarkdown({ leaf: flights, lineage: lineageOf(flights, (id) => goals.get(id)), fullOutput: null })
    assert.equal(md, [
      '# Book flights',
      '',
      '**Prompt**',
      '',
      '> Book flights',
      '',
      '**Goal:** Plan a two-week trip to Japan',
      '',
      '| Status | Capability | Executor | Node |',
      '|---|---|---|---|',
      `| ${w('done')} | \`can_write_text\` | \`peer-ex-1\` | \`${flights.id}\` |`,
      '',
      '---',
      '',
      'Flights: NRT, 14 days',
      ''
    ].join('\n'))
  })

  it('a leaf under a subgoal lists the whole lineage; a pending one says the document will update', () => {
    const md = resultMarkdown({ leaf: day1, lineage: lineageOf(day1, (id) => goals.get(id)), fullOutput: null })
    assert.ok(md.includes('**Goal:** Plan a two-week trip to Japan › Plan Tokyo days'))
    assert.ok(md.includes(`| ${w('pending_execution')} | \`can_write_text\` | — |`))
    assert.ok(md.endsWith('_Waiting for an executor to claim this prompt. This document updates when the result arrives._\n'))
  })

  it('a blob result shows the prefix with a note until the full output is there, then the full output only', () => {
    const blob: LeafView = { ...flights, output: 'first 64 KiB…', output_sha256: 'a'.repeat(64) }
    const before = resultMarkdown({ leaf: blob, lineage: [], fullOutput: null })
    assert.ok(before.includes('first 64 KiB…\n\n_… output truncated; fetching the full result (sha256 ' + 'a'.repeat(64) + ')._'))
    const after = resultMarkdown({ leaf: blob, lineage: [], fullOutput: 'the entire output' })
    assert.ok(after.endsWith('---\n\nthe entire output\n'))
    assert.ok(!after.includes('truncated'))
  })

  it('a blob result the peer holds damaged says so instead of any output until a good copy is there (DESIGN R10)', () => {
    const blob: LeafView = { ...flights, output: 'first 64 KiB…', output_sha256: 'a'.repeat(64) }
    const damaged = resultMarkdown({ leaf: blob, lineage: [], fullOutput: null, damaged: true })
    assert.ok(damaged.endsWith(`---\n\n_${resultDamagedText('a'.repeat(64))}._\n`), damaged)
    assert.ok(!damaged.includes('first 64 KiB'))
    assert.ok(!damaged.includes('output truncated'))
    const after = resultMarkdown({ leaf: blob, lineage: [], fullOutput: 'the entire output', damaged: true })
    assert.ok(after.endsWith('---\n\nthe entire output\n'))
  })

  it('multi-line prompts are quoted line by line; a failure is labelled as such', () => {
    const failed: LeafView = { ...flights, text: 'Line one\n\nLine two', status: 'failed', success: false, output: 'rate limited' }
    const md = resultMarkdown({ leaf: failed, lineage: [], fullOutput: null })
    assert.ok(md.startsWith('# Line one\n\n**Prompt**\n\n> Line one\n>\n> Line two\n'))
    assert.ok(md.endsWith('**Execution failed.**\n\nrate limited\n'))
  })

  it('the executor is named as the Plan view names it, also while it runs the prompt', () => {
    const names = new Map([['peer-ex-1', 'local-executor-1']])
    const peerLabel = (p: string): string => names.get(p) ?? p
    const md = resultMarkdown({ leaf: flights, lineage: [], fullOutput: null, peerLabel })
    assert.ok(md.includes(`| ${w('done')} | \`can_write_text\` | \`local-executor-1\` | \`${flights.id}\` |`), md)
    const running = resultMarkdown({ leaf: { ...day1, status: 'claimed', claimer: 'peer-ex-1' }, lineage: [], fullOutput: null, peerLabel })
    assert.ok(running.endsWith('_Running on local-executor-1. This document updates when the result arrives._\n'), running)
  })

  it('a demo-model prompt\'s tab title leaves out the demo label', () => {
    assert.equal(resultPath(flights.id, '[demo output] Research the options — Plan a two-week trip to Japan'), `/result/${flights.id}/Research the options — Plan a two-week ….md`)
  })

  it('result URIs carry the node id and the leaf\'s short title as the tab title', () => {
    const p = resultPath(flights.id, 'Book flights: NRT → KIX!')
    assert.equal(p, `/result/${flights.id}/Book flights NRT → KIX!.md`)
    assert.equal(resultPath(flights.id, 'a/b\\c\nsecond line'), `/result/${flights.id}/a b c.md`)
    assert.equal(resultPath(flights.id, 'x'.repeat(60)), `/result/${flights.id}/${'x'.repeat(39)}….md`)
    assert.equal(nodeIdFromPath(p), flights.id)
    assert.equal(nodeIdFromPath('/result/not-an-id/x.md'), null)
    assert.equal(nodeIdFromPath(`/plan/${flights.id}/x.md`), null)
  })
})

describe('long goal text in trees', () => {
  // 4,000 characters: sentences with spaces, as a user pastes a long description.
  const long = 'Plan a trip. '.repeat(308).slice(0, 4000)
  const g = rootGoal(long)
  const p = proposal(g.goal_id, ['Draft the route ' + 'with many stops '.repeat(20), 'Book it'])
  const split = accepted(p, { atomic: [true, true] })
  const [big] = buildTree(new PlanState([envelopeOf('goal', g), envelopeOf('proposal', p), ...evidenceOf(split).votes.map((v) => envelopeOf('score', v)), envelopeOf('accepted', split),
    envelopeOf('node', promptNode(split, 0)), envelopeOf('node', promptNode(split, 1)), envelopeOf('capability', capability('peer-ex-1', T0 + sec(20)))]), { nowUs: T0 + sec(30), rules: DEFAULT_RULES })
  assert.ok(big)
  const cut = `${'Plan a trip. '.repeat(8)}Plan …`

  it('the terminal tree shows the root goal and every prompt cut to 110 characters with an ellipsis', () => {
    const lines = renderTreeText([big]).split('\n')
    assert.equal(lines[1], `${cut} [${w('decomposed')} score 0.80]`)
    assert.equal(lines[2], `  > final answer [${w('waiting')} for 2]`)
    assert.equal(lines[3], `  - Draft the route ${'with many stops '.repeat(5)}with many sto… [${w('pending_execution')}]`)
    assert.ok(lines.every((l) => l.length < 160), lines.map((l) => l.length).join(','))
  })

  it('the terminal tree marks a split the timeout fallback accepted', () => {
    const fell = { ...big, accepted: big.accepted === null ? null : { ...big.accepted, fallback: true } }
    assert.equal(renderTreeText([fell]).split('\n')[1], `${cut} [${w('decomposed')} score 0.80 fallback]`)
  })

  it('the report has the full goal once, in its heading; tree lines and split headings are cut', () => {
    const md = renderReportMarkdown([big], { generatedAt: 'now' })
    const full = mdEscape(long)
    assert.equal(md.split(full).length - 1, 1, 'the full text once')
    assert.ok(md.includes(`\n## ${full}\n`))
    assert.ok(md.includes(`\n- ${mdEscape(cut)} — *${w('decomposed')}, score 0.80*, synthesis *${w('waiting')}*\n`), md)
    assert.ok(md.includes(`\n#### ${mdEscape(cut)}\n`))
    // The prompt's full text stays in its Results entry.
    assert.ok(md.includes(`1. **Draft the route ${'with many stops '.repeat(20).trim()}** — ${w('pending_execution')}`))
  })
})
