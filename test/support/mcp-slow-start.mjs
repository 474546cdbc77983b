#!/usr/bin/env node
// A stdio MCP server that is slow to start on its first starts, like a server on a loaded
// machine: each start appends a line to --starts-file F, and while F has at most --slow N lines
// the server waits --sleep-ms M (default 60000) before it reads its input (so it misses a short
// handshake timeout); a later start answers at once. One tool: ping {} -> "pong (start K)".
//   node test/support/mcp-slow-start.mjs --starts-file F --slow N [--sleep-ms M]
import { appendFileSync, readFileSync } from 'node:fs'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'

function argValue (flag, fallback) {
  const i = process.argv.indexOf(flag)
  return i < 0 ? fallback : process.argv[i + 1] ?? ''
}

const startsFile = argValue('--starts-file', null)
if (startsFile === null) {
  process.stderr.write('--starts-file: required\n')
  process.exit(2)
}
const slow = Number(argValue('--slow', '0'))
const sleepMs = Number(argValue('--sleep-ms', '60000'))
appendFileSync(startsFile, `${process.pid}\n`)
const start = readFileSync(startsFile, 'utf8').split('\n').filter((l) => l !== '').length
if (start <= slow) {
  process.stderr.write(`start ${start}: slow, answering in ${sleepMs} ms\n`)
  await new Promise((resolve) => setTimeout(resolve, sleepMs))
}
const server = new McpServer({ name: 'slow-start', version: '1.0.0' })
server.registerTool('ping', { description: 'Answers pong with the number of this start.' }, async () => ({ content: [{ type: 'text', text: `pong (start ${start})` }] }))
await server.connect(new StdioServerTransport())
