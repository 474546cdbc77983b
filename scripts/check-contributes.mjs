// Fails (exit 1) when package.json's contributes.configuration disagrees with the code's one
// source of limits and defaults: minimum/maximum and integer-ness from src/peer/protocol/limits.ts,
// defaults from src/extension/settings.ts DEFAULT_SETTINGS, enums from the role, capability and
// provider lists, the swarm-name pattern. Run by `npm run check` (node --import tsx ...).
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import { LIMITS, LLM_PROVIDER_SETTINGS, SWARM_NAME_RE, SWARM_NAME_RULE } from '../src/peer/protocol/limits.ts'
import { CAPABILITIES, ROLES } from '../src/peer/protocol/schemas.ts'
import { DEFAULT_SETTINGS, Keys } from '../src/extension/settings.ts'

/** Settings field -> its LIMITS range. */
const RANGES = {
  listenPort: LIMITS.port,
  dashboardPort: LIMITS.port,
  maxDepth: LIMITS.maxDepth,
  minSplits: LIMITS.minSplits,
  maxSplits: LIMITS.maxSplits,
  quorum: LIMITS.quorum,
  minScore: LIMITS.minScore,
  llmTimeoutMs: LIMITS.llmTimeoutMs
}

/**
 * Every difference between a package.json object and the code, one sentence each naming the setting.
 * @param {any} pkg parsed package.json
 * @returns {string[]}
 */
export function contributesProblems (pkg) {
  const props = pkg?.contributes?.configuration?.properties ?? {}
  const problems = []
  const expect = (key, what, got, want) => {
    if (!isDeepStrictEqual(got, want)) problems.push(`${key}: ${what} is ${JSON.stringify(got)} in package.json, ${JSON.stringify(want)} in the code`)
  }
  for (const [field, key] of Object.entries(Keys)) {
    const p = props[key]
    if (p === undefined) { problems.push(`${key}: missing from contributes.configuration`); continue }
    const def = DEFAULT_SETTINGS[field]
    // Optional text settings are null in the code and "" in the editor; optional numbers are null in both.
    const text = p.type === 'string' || (Array.isArray(p.type) && p.type.includes('string'))
    expect(key, 'the default', p.default, def === null && text ? '' : def)
    const range = RANGES[field]
    if (range !== undefined) {
      expect(key, 'the type', p.type, range.integer ? 'integer' : 'number')
      expect(key, 'the minimum', p.minimum, range.min)
      expect(key, 'the maximum', p.maximum, range.max)
    }
  }
  // Enums are compared as sets: package.json orders them for people (with enumDescriptions).
  const sorted = (a) => (Array.isArray(a) ? [...a].sort() : a)
  expect(Keys.role, 'the enum', sorted(props[Keys.role]?.enum), sorted(ROLES))
  expect(Keys.llmProvider, 'the enum', sorted(props[Keys.llmProvider]?.enum), sorted(LLM_PROVIDER_SETTINGS))
  expect(Keys.capabilities, 'the items enum', sorted(props[Keys.capabilities]?.items?.enum), sorted(CAPABILITIES))
  expect(Keys.swarmName, 'the pattern', props[Keys.swarmName]?.pattern, SWARM_NAME_RE.source)
  expect(Keys.swarmName, 'the patternErrorMessage', props[Keys.swarmName]?.patternErrorMessage, SWARM_NAME_RULE)
  return problems
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'package.json')
  const problems = contributesProblems(JSON.parse(readFileSync(file, 'utf8')))
  for (const p of problems) process.stderr.write(`package.json contributes.configuration: ${p}\n`)
  if (problems.length > 0) {
    process.stderr.write('Make package.json agree with src/peer/protocol/limits.ts and src/extension/settings.ts.\n')
    process.exit(1)
  }
}
