import tseslint from 'typescript-eslint'

/**
 * Which way imports point (DESIGN "Processes and folders", "Import direction"). ESLint does not
 * merge a rule's options across config objects: for each file the last object that sets
 * no-restricted-imports wins. So each folder's block below lists every ban that holds for it,
 * its enclosing folders' included; `bans` are [globs, why] pairs. A glob matches the import
 * specifier as written, so one naming a folder catches '../roles/prompts' and '../../roles' alike.
 */
function restrict (files, paths, ...bans) {
  return {
    files,
    rules: { 'no-restricted-imports': ['error', { paths, patterns: bans.map(([group, message]) => ({ group, message })) }] }
  }
}

// src/peer never imports vscode (it also runs as the headless CLI).
const PEER_PATHS = [{ name: 'vscode', message: 'src/peer must not depend on vscode' }]
// The plan core is imported by the peer and the editor and imports neither.
const PLAN_PATHS = [{ name: 'vscode', message: 'src/plan must not depend on vscode' }]
const PLAN = [['**/peer/**', '**/extension/**', '**/views/**', '**/common/**'], 'src/plan imports only itself (and libraries)']

// Inside the plan core: protocol <- state <- rules <- read.
// The wire protocol (ids, schemas, envelope checks) is the bottom: it knows no state and no rule.
const PROTOCOL = [['**/state', '**/rules', '**/read'], 'src/plan/protocol imports nothing else of src/plan (protocol <- state <- rules <- read)']
// The store holds and merges messages; what they mean is the rules' business.
const STATE = [['**/rules', '**/read'], 'src/plan/state imports only src/plan/protocol (protocol <- state <- rules <- read)']
// The rules judge the state; read models are built on the rules, never the other way.
const RULES = [['**/read'], 'src/plan/rules imports only src/plan/protocol and src/plan/state (protocol <- state <- rules <- read)']

// net/ is the runtime (runtime.ts: one running peer minus its role) that the roles, the
// dashboard and the MCP front door run on top of.
const NET = [['**/roles', '**/dashboard', '**/front'], 'src/peer/net runs under the roles, the dashboard and the front doors: it imports none of them']
// runtime.ts and gossipBus.ts wire net/'s folders together; the folders never reach back up.
const NET_PART = [['**/runtime', '**/gossipBus'], 'net/checks, net/storage, net/transport and net/ingest do not import the wiring above them (net/runtime.ts, net/gossipBus.ts)']
// checks <- storage <- transport <- ingest: the one verification every path uses is below all.
const CHECKS = [['**/storage', '**/transport', '**/ingest'], 'net/checks (verify, drops) is below every other part of net/']
// What a peer keeps on disk knows nothing of how messages travel or are taken in.
const STORAGE = [['**/transport', '**/ingest'], 'net/storage imports neither net/transport nor net/ingest']
// Moving bytes (libp2p, blobs, outbound) knows nothing of how received messages feed the store.
const TRANSPORT = [['**/ingest'], 'net/transport does not import net/ingest']

// "Tools": the executor (a role) uses the tool loop; the tools never reach into a role.
const TOOLS = [['**/roles'], 'src/peer/tools must not import src/peer/roles (roles -> tools)']
// The IPC protocol is what the editor and a peer share; the model bridge's backend (llm/vscode-lm) builds on it.
const IPC = [['**/llm'], 'src/peer/ipc must not import src/peer/llm (llm/vscode-lm imports ipc)']
// "LLM": one provider interface under the roles and the tools, knowing nothing of the swarm.
const LLM = [['**/roles', '**/tools', '**/net', '**/dashboard', '**/front'], 'src/peer/llm imports none of roles, tools, net, dashboard, front']

// The extension host never runs a peer's parts itself: it forks peer processes and talks to
// them over IPC (src/peer/ipc); settings parsers it shares live in src/peer/tools and cliValues.
const EDITOR = [['**/peer/roles', '**/peer/net', '**/peer/llm', '**/peer/sandbox', '**/peer/dashboard', '**/peer/front'], 'the editor reaches a peer over IPC only: no roles, net, llm, sandbox, dashboard or front of src/peer']
// Editor-side imports point down: src/extension -> src/views -> src/common.
const VIEWS = [['**/extension/**'], 'src/views and src/common must not import src/extension']
const COMMON = [['**/extension/**', '**/views/**'], 'src/common imports neither src/extension nor src/views']

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.vscode-test/**', 'out/**'] },
  ...tseslint.configs.recommended,
  restrict(['src/peer/**/*.ts'], PEER_PATHS),
  restrict(['src/peer/net/**/*.ts'], PEER_PATHS, NET),
  restrict(['src/peer/net/{checks,storage,transport,ingest}/**/*.ts'], PEER_PATHS, NET, NET_PART),
  restrict(['src/peer/net/checks/**/*.ts'], PEER_PATHS, NET, NET_PART, CHECKS),
  restrict(['src/peer/net/storage/**/*.ts'], PEER_PATHS, NET, NET_PART, STORAGE),
  restrict(['src/peer/net/transport/**/*.ts'], PEER_PATHS, NET, NET_PART, TRANSPORT),
  restrict(['src/peer/tools/**/*.ts'], PEER_PATHS, TOOLS),
  restrict(['src/peer/ipc/**/*.ts'], PEER_PATHS, IPC),
  restrict(['src/peer/llm/**/*.ts'], PEER_PATHS, LLM),
  restrict(['src/plan/**/*.ts'], PLAN_PATHS, PLAN),
  restrict(['src/plan/protocol/**/*.ts'], PLAN_PATHS, PLAN, PROTOCOL),
  restrict(['src/plan/state/**/*.ts'], PLAN_PATHS, PLAN, STATE),
  restrict(['src/plan/rules/**/*.ts'], PLAN_PATHS, PLAN, RULES),
  restrict(['src/extension/**/*.ts'], [], EDITOR),
  restrict(['src/views/**/*.ts'], [], EDITOR, VIEWS),
  restrict(['src/common/**/*.ts'], [], EDITOR, COMMON),
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error'
    }
  }
)
