// Debian's Chromium driven by playwright-core (no browser download: playwright's own browser
// builds cannot be fetched offline).
import { chromium } from 'playwright-core'
import { onCleanup } from './cleanup.mjs'
import { CHROMIUM_PATH } from './system.mjs'

/**
 * Flags as in the verified probe: no sandbox (root in a container), no GPU, and no background
 * traffic (component updates, sync, field trials). The resolver rule makes every host name except
 * 127.0.0.1 unresolvable, so nothing in the workbench reaches past loopback.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--password-store=basic',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'
]

/**
 * Launches headless Chromium with a persistent profile in `profileDir` (inside the sandbox).
 * Resolves `{ context, page, close() }`; close() is also registered as a cleanup.
 * @param {{ profileDir: string, env: NodeJS.ProcessEnv, viewport?: { width: number, height: number } }} opts
 */
export async function launchBrowser ({ profileDir, env, viewport = { width: 1600, height: 1000 } }) {
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    viewport,
    args: CHROMIUM_ARGS,
    env,
    timeout: 60_000
  })
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    unregister()
    await context.close().catch(() => {})
  }
  const unregister = onCleanup(close)
  const page = context.pages()[0] ?? await context.newPage()
  return { context, page, close }
}
