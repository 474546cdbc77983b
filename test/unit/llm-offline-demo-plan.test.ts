/**
 * The offline demo model's share of dependencies and synthesis (DESIGN R11, R12): its splits carry a
 * dependency, a top-level split holds the code step (a can_run_code leaf where a live executor
 * offers it) and the tool step (a can_query_api leaf where one offers it), and its synthesis
 * visibly combines the parts, quoting programs' and tools' output, while saying it is synthetic.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createProvider } from '../../src/peer/llm/index'
import { CODE_STEP, DEMO_LABEL, TOOL_STEP } from '../../src/peer/llm/offline-demo'
import { decomposePrompt, decompositionSchema, proposalDependencies, scorePrompt, scoreSchema } from '../../src/peer/roles/prompts'
import { synthesisPrompt, SYNTHESIZE_SYSTEM } from '../../src/peer/roles/synthesisPrompts'
import { runMarkdown } from '../../src/peer/sandbox/markdown'
import { traceSection } from '../../src/peer/tools/toolLoop'

const demo = () => createProvider({ provider: 'offline-demo', model: null, baseUrl: null, apiKey: null, maxRetries: 0, retryBaseMs: 0 })
const GOAL = 'Plan a two-week trip to Japan'

describe('offline demo model: dependencies, code step, synthesis', () => {
  it('a split\'s last subgoal depends on the one before it; a top-level split always holds the code and tool steps', async () => {
    const p = demo()
    for (const [depth, ancestors] of [[0, []], [1, [GOAL]]] as const) {
      const out = await p.generateObject({
        purpose: 'decompose', system: '', schema: decompositionSchema(3, 5), schemaName: 'decomposition',
        prompt: decomposePrompt({ goal: depth === 0 ? GOAL : `${DEMO_LABEL} Draft a plan — ${GOAL}`, depth, maxDepth: 3, ancestors, min: 3, max: 5, feedback: [] })
      })
      const n = out.subgoals.length
      assert.deepEqual(out.depends_on, out.subgoals.map((_, i) => (i === n - 1 ? [n - 1] : [])))
      assert.deepEqual(proposalDependencies(out.depends_on, n)?.at(-1), [n - 2])
      for (const step of [CODE_STEP, TOOL_STEP]) {
        if (depth === 0) assert.ok(out.subgoals.some((s) => s.startsWith(`${DEMO_LABEL} ${step} — `)), out.subgoals.join(' | '))
      }
    }
    assert.equal(p.stats().retries, 0, 'valid at the first attempt')
  })

  it('votes make the top-level code step an atomic can_run_code leaf only when a live executor offers can_run_code', async () => {
    const subgoals = [`${DEMO_LABEL} Clarify the requirements — ${GOAL}`, `${DEMO_LABEL} ${CODE_STEP} — ${GOAL}`, `${DEMO_LABEL} Summarise the outcome — ${GOAL}`]
    const vote = async (offered: ('can_write_text' | 'can_run_code')[]) => await demo().generateObject({
      purpose: 'score', system: '', schema: scoreSchema(3, false), schemaName: 'score',
      prompt: scorePrompt({ goal: GOAL, ancestors: [], subgoals, rationale: '', dependsOn: [[], [], [1]], offered })
    })
    const withCode = await vote(['can_write_text', 'can_run_code'])
    assert.deepEqual(withCode.subgoals[1], { is_atomic: true, required_capability: 'can_run_code' })
    assert.equal(withCode.subgoals[0]?.required_capability, 'can_write_text')
    const textOnly = await vote(['can_write_text'])
    assert.ok(textOnly.subgoals.every((v) => v.required_capability === 'can_write_text'))
  })

  it('votes make the top-level tool step an atomic can_query_api leaf only when a live executor offers can_query_api', async () => {
    const subgoals = [`${DEMO_LABEL} ${TOOL_STEP} — ${GOAL}`, `${DEMO_LABEL} ${CODE_STEP} — ${GOAL}`, `${DEMO_LABEL} Summarise the outcome — ${GOAL}`]
    const vote = async (offered: ('can_write_text' | 'can_run_code' | 'can_query_api')[], depth: 0 | 1) => await demo().generateObject({
      purpose: 'score', system: '', schema: scoreSchema(3, false), schemaName: 'score',
      prompt: scorePrompt({ goal: GOAL, ancestors: depth === 0 ? [] : ['Travel'], subgoals, rationale: '', dependsOn: [[], [], [1]], offered })
    })
    const both = await vote(['can_write_text', 'can_query_api', 'can_run_code'], 0)
    assert.deepEqual(both.subgoals.slice(0, 2), [{ is_atomic: true, required_capability: 'can_query_api' }, { is_atomic: true, required_capability: 'can_run_code' }])
    const tools = await vote(['can_write_text', 'can_query_api'], 0)
    assert.deepEqual(tools.subgoals.map((v) => v.required_capability), ['can_query_api', 'can_write_text', 'can_write_text'])
    const nested = await vote(['can_write_text', 'can_query_api'], 1)
    assert.ok(nested.subgoals.every((v) => v.required_capability === 'can_write_text'), 'only a top-level split gets the tool leaf')
  })

  it('a synthesis lists every part\'s title with a line from its result, labelled synthetic', async () => {
    const text = await demo().generateText({
      purpose: 'synthesize', system: SYNTHESIZE_SYSTEM,
      prompt: synthesisPrompt({
        goal: GOAL,
        ancestors: [],
        parts: [
          { title: `${DEMO_LABEL} Clarify the requirements — ${GOAL}`, output: `**${DEMO_LABEL}** Synthetic answer.\n\n### Clarify\n1. Fourteen days in April.` },
          { title: 'Book flights', output: '```\ncode\n```\nNH 10 on 1 April' },
          { title: 'Plan Tokyo', output: `**${DEMO_LABEL}** Synthetic combination.\n\n## Plan Tokyo\n\nCombined from 2 parts:\n\n1. **Day 1**: Asakusa at dawn.\n2. **Day 2**: Shibuya.` },
          {
            title: `${CODE_STEP} — ${GOAL}`,
            output: runMarkdown({
              language: 'node', program: 'console.log(1)', stderr: '', exit_code: 0, duration_ms: 532, limits_hit: [],
              stdout: `${DEMO_LABEL} Synthetic program.\nTask: ${CODE_STEP} — ${GOAL}\nWords: 10, longest: two-week\nChecksum: 123456\n`
            })
          },
          {
            title: `${DEMO_LABEL} ${TOOL_STEP} — ${GOAL}`,
            output: `**${DEMO_LABEL}** Synthetic answer.\n\nWhat the tools returned:\n- \`travel__travel_facts\`: Facts.` + traceSection([
              { tool: 'travel__travel_facts', arguments: '{"city":"Japan"}', duration_ms: 12, output: 'Travel facts for Japan: JR Pass 7 days: 50000 JPY.' },
              { tool: 'travel__clock', arguments: '{}', duration_ms: 3, output: 'unknown time zone "Mars"', error: 'the tool reported an error' }
            ])
          }
        ]
      })
    })
    assert.ok(text.startsWith(`**${DEMO_LABEL}** Synthetic combination of the parts`), text)
    assert.match(text, /^## Plan a two-week trip to Japan$/m)
    assert.match(text, /^Combined from 5 parts:$/m)
    assert.match(text, /^1\. \*\*Clarify the requirements — Plan a two-week trip to Japan\*\*: Fourteen days in April\.$/m)
    assert.match(text, /^2\. \*\*Book flights\*\*: NH 10 on 1 April$/m)
    assert.match(text, /^3\. \*\*Plan Tokyo\*\*: Asakusa at dawn\.$/m, 'a nested synthesis gives its first part\'s line, not its titles')
    assert.match(text, /^5\. \*\*Research the options — Plan a two-week trip to Japan\*\*: Travel facts for Japan: JR Pass 7 days: 50000 JPY\.; failed: unknown time zone "Mars" \(from the MCP tools travel__travel_facts, travel__clock\)$/m, 'a part that called tools says what they returned')
    assert.match(text, /^4\. \*\*Estimate time and budget — Plan a two-week trip to Japan\*\*: Words: 10, longest: two-week; Checksum: 123456 \(ran in a sandbox: node, exit code 0, 532 ms\)$/m, 'a program\'s part says what it printed')
  })
})
