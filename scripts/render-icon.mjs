// Renders the marketplace icon, media/goal-swarm.png (128x128, the size the VS Code
// Marketplace asks for), from the view icon media/goal-swarm.svg: white strokes on a rounded
// blue tile. Run it after changing the SVG: node scripts/render-icon.mjs (needs Chromium, as
// the swarm tier's dashboard test does).
import { readFile } from 'node:fs/promises'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { CHROMIUM_PATH } from '../test/vscode/harness/system.mjs'
import { CHROMIUM_ARGS } from '../test/vscode/harness/browser.mjs'

const repo = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const svg = (await readFile(path.join(repo, 'media', 'goal-swarm.svg'), 'utf8')).replace('stroke="currentColor"', 'stroke="#ffffff"')
const home = mkdtempSync(path.join(os.tmpdir(), 'render-icon-'))
const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, env: { ...process.env, HOME: home, XDG_CONFIG_HOME: home, XDG_CACHE_HOME: home } })
try {
  const page = await browser.newPage({ viewport: { width: 128, height: 128 } })
  const inner = svg.replace(/width="24" height="24"/, 'width="96" height="96"')
  await page.setContent(`<html><body style="margin:0;background:transparent"><div style="width:128px;height:128px;border-radius:24px;background:#1f6feb;display:flex;align-items:center;justify-content:center">${inner}</div></body></html>`)
  await page.screenshot({ path: path.join(repo, 'media', 'goal-swarm.png'), omitBackground: true, clip: { x: 0, y: 0, width: 128, height: 128 } })
} finally {
  await browser.close()
  rmSync(home, { recursive: true, force: true })
}
