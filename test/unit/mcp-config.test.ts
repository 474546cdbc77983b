import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { loadMcpConfig, McpConfigError, parseMcpConfig, readMcpConfigFile, shownUrl } from '../../src/peer/tools/mcpConfig'

const bad = (value: unknown, message: RegExp): void => {
  assert.throws(() => parseMcpConfig(value, 'mcp.json'), (err: unknown) => err instanceof McpConfigError && message.test(err.message))
}

describe('MCP servers file', () => {
  it('reads stdio and HTTP servers in file order, with defaults for the optional fields', () => {
    const servers = parseMcpConfig({
      mcpServers: {
        travel: { command: 'node', args: ['facts.mjs'], env: { TZ: 'UTC' } },
        remote: { url: 'http://127.0.0.1:4000/mcp', headers: { Authorization: 'Bearer x' } },
        bare: { command: 'facts-server' }
      }
    }, 'mcp.json')
    assert.deepEqual(servers, [
      { name: 'travel', kind: 'stdio', command: 'node', args: ['facts.mjs'], env: { TZ: 'UTC' } },
      { name: 'remote', kind: 'http', url: 'http://127.0.0.1:4000/mcp', headers: { Authorization: 'Bearer x' } },
      { name: 'bare', kind: 'stdio', command: 'facts-server', args: [], env: {} }
    ])
  })

  it('names the server and the field of every mistake', () => {
    bad({ mcpServers: { travel: { command: 'node', cwd: '/tmp' } } }, /^mcp\.json: server "travel": unknown field "cwd"$/)
    bad({ mcpServers: { travel: { command: 'node', args: 'facts.mjs' } } }, /^mcp\.json: server "travel": "args": .*array/)
    bad({ mcpServers: { travel: { command: 'node', args: ['a', 3] } } }, /server "travel": "args\[1\]": .*string/)
    bad({ mcpServers: { travel: { command: 'node', env: { TZ: 1 } } } }, /server "travel": "env\.TZ": .*string/)
    bad({ mcpServers: { travel: { command: 7 } } }, /server "travel": "command": .*string/)
    bad({ mcpServers: { both: { command: 'node', url: 'http://127.0.0.1:1/mcp' } } }, /server "both": has both "command" and "url"/)
    bad({ mcpServers: { none: { args: [] } } }, /server "none": needs "command" .* or "url"/)
    bad({ mcpServers: { web: { url: 'not a url' } } }, /server "web": "url": /)
    bad({ mcpServers: { web: { url: 'ftp://127.0.0.1/x' } } }, /server "web": "url": /)
    bad({ mcpServers: { 'has space': { command: 'node' } } }, /server "has space": the name must be/)
    bad({ mcpServers: { travel: 'node facts.mjs' } }, /server "travel": expected an object/)
  })

  it('names the key when the file has VS Code\'s "servers", and asks for http(s) URLs', () => {
    bad({ servers: { travel: { command: 'node' } } }, /^mcp\.json: has "servers" \(the key of VS Code's mcp\.json\) where this file takes "mcpServers"; rename the key$/)
    bad({ mcpServers: { web: { url: 'ftp://tools.example/mcp' } } }, /^mcp\.json: server "web": "url": expected an http:\/\/ or https:\/\/ URL$/)
  })

  it('shows a URL without its credentials, query or fragment', () => {
    assert.equal(shownUrl('https://user:pw@tools.example:8443/mcp?api_key=SECRET#x'), 'https://tools.example:8443/mcp?…')
    assert.equal(shownUrl('http://127.0.0.1:8931/mcp'), 'http://127.0.0.1:8931/mcp')
    assert.equal(shownUrl('not a url'), 'a URL that does not parse')
  })

  it('says what the file must look like when the top level is wrong', () => {
    bad({ other: {} }, /^mcp\.json: .*expected \{"mcpServers"/)
    bad({ mcpServers: [] }, /^mcp\.json: "mcpServers": .*expected \{"mcpServers"/)
    bad([], /^mcp\.json: .*expected \{"mcpServers"/)
  })

  it('reports an unreadable file and bad JSON with the path', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcp-config-'))
    const missing = path.join(dir, 'missing.json')
    assert.throws(() => loadMcpConfig(missing), (e: unknown) => e instanceof McpConfigError && e.message.startsWith(`cannot read ${missing}: ENOENT`))
    const broken = path.join(dir, 'broken.json')
    writeFileSync(broken, '{"mcpServers": {')
    assert.throws(() => loadMcpConfig(broken), (e: unknown) => e instanceof McpConfigError && e.message === `${broken} is not valid JSON: close brace expected at line 1, column 17`)
    // The file holds secrets (env, headers): a parse error says where, never what the text around it is.
    const secret = path.join(dir, 'secret.json')
    writeFileSync(secret, '{"mcpServers": {\n  "web": {"url": "https://tools.example/mcp",\n    "headers": {"X-Api-Key": \'hunter2\'}}}}')
    const [problem] = readMcpConfigFile(secret).problems
    assert.equal(problem?.message, `${secret} is not valid JSON: invalid symbol at line 3, column 30`)
    const good = path.join(dir, 'good.json')
    writeFileSync(good, JSON.stringify({ mcpServers: { travel: { command: 'node' } } }))
    assert.equal(loadMcpConfig(good)[0]?.name, 'travel')
  })

  it('read entry by entry, a bad entry is left out with its problem and the good ones are kept; an unreadable file is one problem', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcp-config-'))
    const mixed = path.join(dir, 'mixed.json')
    writeFileSync(mixed, JSON.stringify({ mcpServers: { travel: { command: 'node' }, 'a b': { command: 'x' }, web: { url: 'ftp://x' }, remote: { url: 'http://127.0.0.1:1/mcp' } } }))
    const read = readMcpConfigFile(mixed)
    assert.deepEqual(read.servers.map((s) => s.name), ['travel', 'remote'])
    assert.deepEqual(read.problems.map((p) => p.server), ['a b', 'web'])
    assert.match(read.problems[0]?.message ?? '', new RegExp(`^${mixed.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: server "a b": the name must be`))
    assert.match(read.problems[1]?.message ?? '', /: server "web": "url": /)
    const missing = path.join(dir, 'missing.json')
    assert.deepEqual(readMcpConfigFile(missing).servers, [])
    assert.deepEqual(readMcpConfigFile(missing).problems.map((p) => p.server), [null])
    assert.throws(() => loadMcpConfig(mixed), (e: unknown) => e instanceof McpConfigError && e.message.includes('server "a b"'), 'the strict reading still refuses the file')
  })
})
