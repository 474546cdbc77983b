#!/usr/bin/env node
// A small MCP server with fixed travel data, for trying executor tools without any network
// (DESIGN "Tools"). Every answer is a pure function of the arguments, so tests and demos see
// the same output every run.
//   node scripts/mcp-travel-facts.mjs                   MCP over stdio (what --mcp-config "command" starts)
//   node scripts/mcp-travel-facts.mjs --http PORT       MCP over Streamable HTTP on http://127.0.0.1:PORT/mcp
//   --delay-ms N   answer every tool call after N ms (to try per-call timeouts and aborts)
//   --pid-file F   write this process's pid to F at start; exit 1 when F cannot be written
//                  (to find the server an executor started, and to make its restart fail)
// Tools: travel_facts {city} (a city or a country), convert_currency {amount, from, to}, clock {time_zone?}.
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { z } from 'zod'

const FACTS = {
  tokyo: { country: 'Japan', currency: 'JPY', time_zone: 'Asia/Tokyo', rail_pass: 'JR Pass 7 days: 50000 JPY', best_months: 'March-May, October-November' },
  kyoto: { country: 'Japan', currency: 'JPY', time_zone: 'Asia/Tokyo', rail_pass: 'Shinkansen from Tokyo: 2 h 15 min, 14170 JPY', best_months: 'April, November' },
  osaka: { country: 'Japan', currency: 'JPY', time_zone: 'Asia/Tokyo', rail_pass: 'Shinkansen from Tokyo: 2 h 30 min, 14720 JPY', best_months: 'March-May' },
  paris: { country: 'France', currency: 'EUR', time_zone: 'Europe/Paris', rail_pass: 'Navigo week pass: 31.60 EUR', best_months: 'April-June, September' },
  lisbon: { country: 'Portugal', currency: 'EUR', time_zone: 'Europe/Lisbon', rail_pass: 'Viva Viagem day pass: 7.40 EUR', best_months: 'March-May, September-October' }
}
/** A country's facts, for a task that names the country rather than a city ("a trip to Japan"). */
const COUNTRIES = {
  japan: { currency: 'JPY', time_zone: 'Asia/Tokyo', rail_pass: 'JR Pass 7 days: 50000 JPY', best_months: 'March-May, October-November', cities: 'Tokyo, Kyoto, Osaka' },
  france: { currency: 'EUR', time_zone: 'Europe/Paris', rail_pass: 'Navigo week pass in Paris: 31.60 EUR', best_months: 'April-June, September', cities: 'Paris' },
  portugal: { currency: 'EUR', time_zone: 'Europe/Lisbon', rail_pass: 'Viva Viagem day pass in Lisbon: 7.40 EUR', best_months: 'March-May, September-October', cities: 'Lisbon' }
}
/** Units of each currency per 1 USD (fixed, not live). */
const PER_USD = { USD: 1, EUR: 0.92, JPY: 150, GBP: 0.79, CHF: 0.88 }
/** The fixed instant the clock tool reports unless given another. */
const FIXED_NOW = '2026-04-01T09:00:00Z'

function argValue (flag) {
  const i = process.argv.indexOf(flag)
  return i < 0 ? null : process.argv[i + 1] ?? ''
}

const delayArg = argValue('--delay-ms')
const delayMs = delayArg === null ? 0 : Number(delayArg)
if (!Number.isInteger(delayMs) || delayMs < 0) {
  process.stderr.write(`--delay-ms: expected a whole number of milliseconds, got "${delayArg}"\n`)
  process.exit(2)
}

const pidFile = argValue('--pid-file')
if (pidFile !== null) {
  try {
    writeFileSync(pidFile, `${process.pid}\n`)
  } catch (err) {
    process.stderr.write(`--pid-file: cannot write ${pidFile}: ${err.message}\n`)
    process.exit(1)
  }
}

const text = (t, isError = false) => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) })
const later = async (value) => {
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
  return value
}

function newServer () {
  const server = new McpServer({ name: 'travel-facts', version: '1.0.0' })
  server.registerTool('travel_facts', {
    description: 'Fixed travel facts for a city (or a country): country, currency, time zone, a rail fare and the best months to visit.',
    inputSchema: { city: z.string().describe('City name, e.g. Tokyo, or a country, e.g. Japan') }
  }, async ({ city }) => {
    const key = city.trim().toLowerCase()
    const f = FACTS[key]
    const c = COUNTRIES[key]
    const names = (table) => Object.keys(table).map((k) => k[0].toUpperCase() + k.slice(1)).join(', ')
    if (f === undefined && c === undefined) return later(text(`no travel facts for "${city}"; known cities: ${names(FACTS)}; countries: ${names(COUNTRIES)}`, true))
    if (f === undefined) return later(text(`Travel facts for ${city.trim()}: currency ${c.currency}; time zone ${c.time_zone}; ${c.rail_pass}; best months ${c.best_months}; cities with facts: ${c.cities}.`))
    return later(text(`Travel facts for ${city.trim()}: country ${f.country}; currency ${f.currency}; time zone ${f.time_zone}; ${f.rail_pass}; best months ${f.best_months}.`))
  })
  server.registerTool('convert_currency', {
    description: `Converts an amount between ${Object.keys(PER_USD).join(', ')} at fixed rates.`,
    inputSchema: { amount: z.number().describe('Amount in the "from" currency'), from: z.string().describe('ISO code, e.g. USD'), to: z.string().describe('ISO code, e.g. JPY') }
  }, async ({ amount, from, to }) => {
    const a = PER_USD[from.toUpperCase()]
    const b = PER_USD[to.toUpperCase()]
    if (a === undefined || b === undefined) return later(text(`unknown currency ${a === undefined ? from : to}; known: ${Object.keys(PER_USD).join(', ')}`, true))
    const out = Math.round((amount / a) * b * 100) / 100
    return later(text(`${amount} ${from.toUpperCase()} = ${out} ${to.toUpperCase()} (fixed rate, not live)`))
  })
  server.registerTool('clock', {
    description: `The current time (fixed at ${FIXED_NOW} in this demo), in UTC or a given IANA time zone.`,
    inputSchema: { time_zone: z.string().optional().describe('IANA time zone, e.g. Asia/Tokyo'), at: z.string().optional().describe('ISO instant to report instead of the fixed one') }
  }, async ({ time_zone: tz, at }) => {
    const when = new Date(at ?? FIXED_NOW)
    if (Number.isNaN(when.getTime())) return later(text(`"at" is not an ISO instant: ${at}`, true))
    try {
      const local = when.toLocaleString('en-GB', { timeZone: tz ?? 'UTC', dateStyle: 'full', timeStyle: 'long' })
      return later(text(`${local} (${when.toISOString()})`))
    } catch {
      return later(text(`unknown time zone "${tz}"`, true))
    }
  })
  return server
}

const httpArg = argValue('--http')
if (httpArg === null) {
  await newServer().connect(new StdioServerTransport())
} else {
  const port = Number(httpArg)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--http: expected a TCP port (0-65535), got "${httpArg}"\n`)
    process.exit(2)
  }
  // Stateless: every POST gets its own server and transport, so no session state is kept.
  const http = createServer(async (req, res) => {
    if (req.url !== '/mcp' || req.method !== 'POST') { res.writeHead(req.url === '/mcp' ? 405 : 404).end(); return }
    const chunks = []
    for await (const c of req) chunks.push(c)
    let body
    try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')) } catch { res.writeHead(400).end('bad JSON'); return }
    const server = newServer()
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    res.on('close', () => { void transport.close(); void server.close() })
    await server.connect(transport)
    await transport.handleRequest(req, res, body)
  })
  http.listen(port, '127.0.0.1', () => {
    process.stdout.write(`travel-facts MCP server on http://127.0.0.1:${http.address().port}/mcp\n`)
  })
  const stop = () => { http.close(); process.exit(0) }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
