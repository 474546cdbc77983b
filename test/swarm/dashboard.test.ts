/**
 * The live dashboard (--dashboard-port) in real Chromium (Debian's, driven by playwright-core):
 * a real swarm of peer processes plans a goal whose texts carry markup; the observer's page
 * fills in row by row until the plan is complete, shows the peers and the message flow, opens a
 * result and the final answer in place as plain text, shows the plan's cost, and after the observer is killed and restarted on the same
 * port it says "reconnecting" and then shows the state again from the restarted process.
 * Behind a proxy that holds event streams back, the page polls and still shows the plan.
 * Bad requests get 4xx. A screenshot goes to artifacts/dashboard/. Run `npm run build` first.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { createServer as createHttpServer, request as httpRequest } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import path from 'node:path'
import { test } from 'node:test'
import { pathToFileURL } from 'node:url'
import { demoResponder } from '../support/llm-standin'
import { formatTopic } from '../../src/plan/protocol/topics'
import { INJECTOR_SPEC, REPO_ROOT, TestSwarm } from '../support/peers'
import { liveLeaves } from '../support/leaves'
import { waitForPeerRecord } from '../support/wait'
import { roleArgs, startStandin, treeOf, waitComplete } from './roles-support'
import { statusWord } from '../../src/plan/read/statusWords'

/** Markup in swarm text: shown as text, it never runs nor becomes an element. */
const GOAL = 'Plan a <b>trip</b> <img src=x onerror="window.__pwned=1">'
const RESULT_MARKUP = '<script>window.__pwned=2</script><img src=y onerror="window.__pwned=3">'

interface Harness {
  ensureDebianPackages(o: { names: string[] }): Promise<{ ok: boolean, reason?: string }>
  CHROMIUM_PATH: string
}

async function freePort (): Promise<number> {
  const srv = createServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const port = (srv.address() as AddressInfo).port
  await new Promise<void>((resolve) => srv.close(() => resolve()))
  return port
}

/**
 * An HTTP proxy on loopback serving the dashboard on `port` under /proxy/<port>/, that passes
 * every answer through except event streams, whose bodies it keeps until they end.
 */
async function bufferingProxy (port: number): Promise<{ url: string, heldStreams: () => number, close: () => Promise<void> }> {
  let held = 0
  const prefix = `/proxy/${port}`
  const server = createHttpServer((req, res) => {
    const upstream = httpRequest({ host: '127.0.0.1', port, path: (req.url ?? '/').slice(prefix.length) || '/', method: req.method, headers: { ...req.headers, host: `127.0.0.1:${port}` } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      if (!String(up.headers['content-type']).startsWith('text/event-stream')) { up.pipe(res); return }
      held++
      const body: Buffer[] = []
      up.on('data', (d: Buffer) => body.push(d))
      up.on('end', () => res.end(Buffer.concat(body)))
    })
    upstream.on('error', () => { res.destroy() })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${prefix}/`,
    heldStreams: () => held,
    close: async () => { server.closeAllConnections(); await new Promise<void>((resolve) => server.close(() => resolve())) }
  }
}

test('dashboard: the plan fills in live in Chromium, results open in place, and the page reconnects after a restart', async (t) => {
  const harness = path.join(REPO_ROOT, 'test', 'vscode', 'harness')
  const system = await import(pathToFileURL(path.join(harness, 'system.mjs')).href) as Harness
  const { CHROMIUM_ARGS } = await import(pathToFileURL(path.join(harness, 'browser.mjs')).href) as { CHROMIUM_ARGS: string[] }
  const pkgs = await system.ensureDebianPackages({ names: ['chromium'] })
  if (!pkgs.ok) { t.skip(`Chromium is not available: ${pkgs.reason}`); return }
  const { chromium } = await import('playwright-core')

  const swarm = new TestSwarm()
  const standin = await startStandin(async (req) => {
    if (req.purpose !== 'execute') return null
    const reply = await demoResponder(req)
    return typeof reply === 'object' && 'text' in reply ? { text: `${reply.text}\n\n${RESULT_MARKUP}` } : reply
  })
  let closeBrowser = async (): Promise<void> => {}
  t.after(async () => { await closeBrowser(); await swarm.close(); await standin.close() })

  const port = await freePort()
  const args = roleArgs(standin)
  const dash = await swarm.start({ role: 'observer', name: 'dash', args: [...args, '--dashboard-port', String(port)] })
  const url = `http://127.0.0.1:${port}/`
  assert.equal(dash.ready?.dashboard, url, 'the ready message carries the dashboard URL')
  // stderr and the IPC channel are separate pipes: the start record may come after `ready`.
  const started = await waitForPeerRecord(dash, { event: 'started' })
  assert.equal(started.dashboard, url, 'the start record names the dashboard URL')
  await swarm.start({ role: 'decomposer', name: 'dec', args })
  await swarm.start({ role: 'scorer', name: 'sc1', args })
  await swarm.start({ role: 'scorer', name: 'sc2', args })
  await swarm.start({ role: 'executor', name: 'exec', args })

  // Chromium writes its profile and caches under HOME/XDG dirs: keep them in the swarm's temp dir.
  const home = path.join(swarm.baseDir, 'chromium-home')
  mkdirSync(home, { recursive: true })
  const browser = await chromium.launch({
    executablePath: system.CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), XDG_CACHE_HOME: path.join(home, 'cache') },
    timeout: 60_000
  })
  closeBrowser = async () => { await browser.close().catch(() => {}) }
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
  const pageErrors: string[] = []
  page.on('pageerror', (e) => { pageErrors.push(e.message) })
  await page.goto(url)
  await page.waitForSelector('#conn[data-state="live"]', { timeout: 20_000 })
  await page.waitForSelector('#peers tbody tr[data-role="executor"]', { timeout: 20_000 })

  const goalId = await dash.submitGoal(GOAL)
  // The root row appears while its split is still being voted on, then the plan completes.
  await page.waitForSelector(`.plan[data-id="${goalId}"] li.node.goal[data-id="${goalId}"]`, { timeout: 20_000 })
  const progress = await waitComplete(dash, goalId)
  await page.waitForSelector(`.plan[data-id="${goalId}"][data-complete="true"]`, { timeout: 20_000 })
  const plan = page.locator(`.plan[data-id="${goalId}"]`)
  assert.equal(await plan.locator('.progress-text').textContent(), `${progress.leaves}/${progress.leaves} done · ${progress.syntheses}/${progress.syntheses} synthesized`)
  assert.equal(await plan.locator('.badge').textContent(), 'complete')
  assert.equal(await plan.locator('h3').textContent(), GOAL, 'the goal text shows as text')
  assert.equal(await page.locator('#plans img, #plans script, #plans b').count(), 0, 'no markup from the swarm became an element')

  // The page's leaves are the observer's own tree (buildTree), each done.
  const root = treeOf(dash).find((r) => r.id === goalId)
  assert.ok(root !== undefined)
  const leaves = liveLeaves(root)
  assert.equal(leaves.length, progress.leaves)
  const pageLeaves = await plan.locator('li.node.leaf').evaluateAll((els) => els.map((e) => [e.getAttribute('data-id'), e.getAttribute('data-status')]))
  assert.deepEqual(pageLeaves.sort(), leaves.map((l) => [l.id, 'done']).sort())
  assert.equal(await plan.locator('li.node.leaf .status').first().textContent(), statusWord('done'), 'the word of the snapshot, from the one table')

  // Peers and message flow.
  for (const role of ['observer', 'decomposer', 'scorer', 'executor']) assert.ok(await page.locator(`#peers tbody tr[data-role="${role}"]`).count() >= 1, role)
  assert.equal(await page.locator('#peers tbody tr[data-role="scorer"]').count(), 2)
  await page.waitForSelector('#flow .flow-item.message[data-kind="result"]', { timeout: 10_000 })

  // A result opens in place, as text.
  const leaf = leaves[0]
  assert.ok(leaf !== undefined && leaf.output !== null)
  await plan.locator(`li.node.leaf[data-id="${leaf.id}"] > .row`).click()
  const pre = page.locator(`pre.result-ok[data-for="${leaf.id}"]`)
  await pre.waitFor({ timeout: 10_000 })
  assert.equal(await pre.textContent(), await dash.getOutput(leaf.id))
  assert.ok((await pre.textContent())?.includes(RESULT_MARKUP))
  assert.equal(await page.evaluate('typeof window.__pwned'), 'undefined', 'no script from the swarm ran')
  assert.equal(await page.locator('#plans img, #plans script').count(), 0)

  // The plan's final answer (the root's synthesis) opens in place like a result; its cost is on the card.
  const answerId = root.synthesis?.id
  assert.ok(answerId !== undefined)
  const answer = plan.locator(`li.node.answer[data-id="${answerId}"]`)
  assert.equal(await answer.getAttribute('data-status'), 'done')
  await answer.locator('> .row').click()
  const answerPre = page.locator(`pre.result-ok[data-for="${answerId}"]`)
  await answerPre.waitFor({ timeout: 10_000 })
  assert.equal(await answerPre.textContent(), await dash.getOutput(answerId))
  assert.match(await plan.locator('.cost-summary').textContent() ?? '', /^\d+ calls? · [\d.]+[kM]? tokens$/)
  // Its money (DESIGN R13 "Money"): the stand-in's model has no price, so none is made up; the
  // cost tables fold open, the roles' rows with the plan's total, a row per goal, the model's.
  assert.equal(await plan.locator('.cost-money').textContent(), 'price unknown (1 model without a price)')
  await plan.locator('.cost-details > summary').click()
  assert.deepEqual(await plan.locator('table.cost-table[data-table="role"] tbody td:first-child').allTextContents(), ['decomposer', 'scorer', 'executor', 'total'])
  assert.equal(await plan.locator('table.cost-table[data-table="role"] tbody tr:last-child td.cost-usd').textContent(), 'price unknown')
  assert.equal(await plan.locator(`table.cost-table[data-table="goal"] tbody tr[data-goal="${goalId}"] td.cost-goal`).textContent(), GOAL, 'the goal text shows as text')
  assert.deepEqual(await plan.locator('table.cost-table[data-table="model"] tbody td:first-child').allTextContents(), [treeOf(dash).find((r) => r.id === goalId)?.plan?.spend.lines[0]?.model ?? ''])

  // A malformed gossip message shows as a drop with its reason, in the counters and the strip.
  const injector = await swarm.start({ ...INJECTOR_SPEC, name: 'injector', bootstrap: [dash.addr], readyTimeoutMs: 60_000 })
  await injector.waitForPeers(1, 30_000)
  const topic = formatTopic({ swarm: 'default', kind: 'plan' })
  // Gossip reaches the dashboard's peer once the two have exchanged subscriptions: resend until it counts one.
  for (let i = 0; dash.drops('invalid_schema') === 0; i++) {
    assert.ok(i < 20, 'the dashboard peer never counted the malformed message')
    const r = await injector.request({ type: 'inject-raw', topic, text: '{"not": "an envelope"}' })
    assert.equal(r.type, 'inject-done')
    await dash.waitFor(() => dash.drops('invalid_schema') > 0, 'a counted drop', 1500).catch(() => {})
  }
  await page.waitForSelector('#drops li[data-reason="invalid_schema"]', { timeout: 10_000 })
  await page.waitForSelector('#flow .flow-item.drop[data-kind="invalid_schema"]', { timeout: 10_000 })
  assert.match(await page.locator('#flow .flow-item.drop[data-kind="invalid_schema"]').first().textContent() ?? '', /dropped: invalid schema \(gossip\)/)
  await injector.stop()

  // Bad requests are refused, and the server keeps serving.
  assert.equal((await fetch(`${url}api/result/not-an-id`)).status, 400)
  assert.equal((await fetch(`${url}api/result/0123456789abcdef`)).status, 404)
  assert.equal((await fetch(`${url}no/such/page`)).status, 404)
  assert.equal((await fetch(url, { method: 'POST', body: 'x' })).status, 405)
  assert.equal((await fetch(`${url}api/state`)).status, 200)

  // The dashboard's own peer is live on its page, however old its last announcement.
  assert.equal(await page.locator('#peers tbody tr', { hasText: '(this dashboard)' }).getAttribute('class'), 'live')

  // Behind a port forwarding that holds an event stream back (a buffering proxy under a path
  // prefix, as an editor's port forwarding serves it) the page falls back to polling and
  // still shows the plan.
  const proxy = await bufferingProxy(port)
  t.after(async () => { await proxy.close() })
  const proxied = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
  proxied.on('pageerror', (e) => { pageErrors.push(e.message) })
  await proxied.goto(proxy.url)
  await proxied.waitForSelector(`.plan[data-id="${goalId}"][data-complete="true"]`, { timeout: 30_000 })
  assert.equal(await proxied.locator('#conn').textContent(), 'live (polling)')
  assert.ok(proxy.heldStreams() > 0, 'the page did ask for the event stream, which the proxy held back')
  await proxied.close()

  mkdirSync(path.join(REPO_ROOT, 'artifacts', 'dashboard'), { recursive: true })
  await page.screenshot({ path: path.join(REPO_ROOT, 'artifacts', 'dashboard', 'dashboard.png'), fullPage: true })

  // Restart the dashboard's peer on the same port: the page reconnects and shows the state
  // of the new process (its boot time), reloaded from its state log and synced.
  const bootBefore = await page.locator('body').getAttribute('data-boot')
  await dash.kill()
  await page.waitForSelector('#conn[data-state="reconnecting"]', { timeout: 10_000 })
  const dash2 = await swarm.restart(dash)
  assert.equal(dash2.ready?.dashboard, url)
  // The page sets the boot time and "live" from the same first snapshot of the new process.
  await page.waitForSelector(`body:not([data-boot="${bootBefore ?? ''}"])`, { timeout: 20_000 })
  await page.waitForSelector('#conn[data-state="live"]', { timeout: 5_000 })
  await page.waitForSelector(`.plan[data-id="${goalId}"][data-complete="true"]`, { timeout: 20_000 })
  assert.equal(await page.locator(`.plan[data-id="${goalId}"] .progress-text`).textContent(), `${progress.leaves}/${progress.leaves} done · ${progress.syntheses}/${progress.syntheses} synthesized`)
  // The opened result stays open across the reconnect.
  await page.locator(`pre.result-ok[data-for="${leaf.id}"]`).waitFor({ timeout: 10_000 })
  await page.screenshot({ path: path.join(REPO_ROOT, 'artifacts', 'dashboard', 'dashboard-after-restart.png'), fullPage: true })
  assert.deepEqual(pageErrors, [])
})
