// Fails (exit 1) when package.json's contributes.configuration disagrees with the code: every
// numeric setting is a row of the tunables table (src/plan/protocol/tunables.ts TUNABLES) and
// its type, minimum, maximum, default and markdownDescription are that row's; other defaults
// come from src/extension/settings.ts DEFAULT_SETTINGS, enums from the role, capability and
// provider lists, the pattern from the swarm-name rule. Run by `npm run check`
// (node --import tsx ...). With --write it first rewrites the numeric settings from the table.
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import { LLM_PROVIDER_SETTINGS, SWARM_NAME_RE, SWARM_NAME_RULE } from '../src/plan/protocol/limits.ts'
import { settingDefault, TUNABLES } from '../src/plan/protocol/tunables.ts'
import { CAPABILITIES, ROLES } from '../src/plan/protocol/schemas.ts'
import { DEFAULT_SETTINGS, Keys, SETTING_TUNABLES } from '../src/extension/settings.ts'
import { MCP_SERVERS_SETTING } from '../src/extension/mcpSettings.ts'
import { ALLOW_ENTRY, SERVER_NAME } from '../src/peer/tools/mcpConfig.ts'

/** The tunables the editor offers, by setting key. */
const OFFERED = new Map(Object.values(TUNABLES).filter((t) => t.setting !== undefined).map((t) => [t.setting, t]))

/**
 * The package.json fields a tunable row gives its setting: an optional one (default null)
 * also takes null.
 * @param {import('../src/plan/protocol/tunables.ts').Tunable} t
 */
export function settingFields (t) {
  const type = t.integer ? 'integer' : 'number'
  const def = settingDefault(t)
  return { type: def === null ? [type, 'null'] : type, default: def, minimum: t.min, maximum: t.max, markdownDescription: t.settingDoc }
}

const numeric = (type) => (Array.isArray(type) ? type : [type]).some((x) => x === 'integer' || x === 'number')

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
  for (const [key, t] of OFFERED) {
    const p = props[key]
    if (p === undefined) { problems.push(`${key}: missing from contributes.configuration (its tunable is ${t.flag})`); continue }
    const want = settingFields(t)
    for (const field of ['type', 'minimum', 'maximum', 'default', 'markdownDescription']) expect(key, `the ${field === 'markdownDescription' ? 'description' : field}`, p[field], want[field])
  }
  for (const [key, p] of Object.entries(props)) {
    if (numeric(p?.type) && !OFFERED.has(key)) problems.push(`${key}: a numeric setting that is not in the tunables table (src/plan/protocol/tunables.ts)`)
  }
  // The settings must read every tunable the table offers, under the table's key.
  const read = new Set(Object.values(SETTING_TUNABLES).map((t) => t.setting))
  for (const key of OFFERED.keys()) if (!read.has(key)) problems.push(`${key}: offered by the tunables table but not read by src/extension/settings.ts SETTING_TUNABLES`)
  for (const [field, key] of Object.entries(Keys)) {
    const p = props[key]
    if (p === undefined) { if (!OFFERED.has(key)) problems.push(`${key}: missing from contributes.configuration`); continue }
    if (OFFERED.has(key)) continue
    const def = DEFAULT_SETTINGS[field]
    // Optional text settings are null in the code and "" in the editor.
    const text = p.type === 'string' || (Array.isArray(p.type) && p.type.includes('string'))
    expect(key, 'the default', p.default, def === null && text ? '' : def)
  }
  // Enums are compared as sets: package.json orders them for people (with enumDescriptions).
  const sorted = (a) => (Array.isArray(a) ? [...a].sort() : a)
  expect(Keys.role, 'the enum', sorted(props[Keys.role]?.enum), sorted(ROLES))
  expect(Keys.llmProvider, 'the enum', sorted(props[Keys.llmProvider]?.enum), sorted(LLM_PROVIDER_SETTINGS))
  expect(Keys.capabilities, 'the items enum', sorted(props[Keys.capabilities]?.items?.enum), sorted(CAPABILITIES))
  expect(Keys.swarmName, 'the pattern', props[Keys.swarmName]?.pattern, SWARM_NAME_RE.source)
  expect(Keys.swarmName, 'the patternErrorMessage', props[Keys.swarmName]?.patternErrorMessage, SWARM_NAME_RULE)
  // The editor's MCP settings take what a peer's --mcp-config file and --mcp-allow take.
  expect(MCP_SERVERS_SETTING, 'the server name pattern', props[MCP_SERVERS_SETTING]?.propertyNames?.pattern, SERVER_NAME.source)
  expect(Keys.mcpAllow, 'the items pattern', props[Keys.mcpAllow]?.items?.pattern, ALLOW_ENTRY.source)
  return problems
}

/**
 * `pkg` with each offered tunable's setting fields rewritten from the table (other fields and
 * key order kept; a missing setting is added at the end). Mutates and returns `pkg`.
 * @param {any} pkg parsed package.json
 */
export function writeTunableSettings (pkg) {
  const props = pkg.contributes.configuration.properties
  for (const [key, t] of OFFERED) props[key] = Object.assign(props[key] ?? {}, settingFields(t))
  return pkg
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'package.json')
  let pkg = JSON.parse(readFileSync(file, 'utf8'))
  if (process.argv.includes('--write')) {
    pkg = writeTunableSettings(pkg)
    writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n')
  }
  const problems = contributesProblems(pkg)
  for (const p of problems) process.stderr.write(`package.json contributes.configuration: ${p}\n`)
  if (problems.length > 0) {
    process.stderr.write('Make package.json agree with src/plan/protocol/tunables.ts (node --import tsx scripts/check-contributes.mjs --write rewrites its numeric settings), src/plan/protocol/limits.ts and src/extension/settings.ts.\n')
    process.exit(1)
  }
}
