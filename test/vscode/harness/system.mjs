// Debian packages the real-editor tier needs: chromium (the browser playwright-core drives),
// libkrb5-dev (gssapi.h, needed to build code-server's kerberos native module on install) and
// bubblewrap (the sandbox the editor's contributed executor runs can_run_code programs in).
import { existsSync } from 'node:fs'
import { log, run, seconds, stopwatch } from './util.mjs'

export const DEBIAN_PACKAGES = ['chromium', 'libkrb5-dev', 'bubblewrap']
export const CHROMIUM_PATH = '/usr/bin/chromium'

/** Names of the packages in `names` that dpkg does not report as installed. */
export async function missingPackages (names = DEBIAN_PACKAGES) {
  const missing = []
  for (const name of names) {
    const { code, stdout } = await run('dpkg-query', ['-W', '-f=${Status}', name], { allowFailure: true })
      .catch(() => ({ code: 1, stdout: '' }))
    if (code !== 0 || !stdout.includes('install ok installed')) missing.push(name)
  }
  return missing
}

/**
 * Makes sure the Debian packages are installed. Installs missing ones with apt-get (after an
 * `apt-get update`) when running as root. Never throws for an unusable machine: resolves
 * `{ ok: false, reason }` so the caller can skip the tier with that reason printed.
 * apt-get reads none of the npm_config_* variables an enclosing `npm test` exports, so this
 * behaves the same under npm as when run directly.
 */
export async function ensureDebianPackages ({ names = DEBIAN_PACKAGES } = {}) {
  if (!existsSync('/usr/bin/dpkg-query')) return { ok: false, reason: 'not a Debian system (no dpkg-query)', installMs: 0 }
  const missing = await missingPackages(names)
  if (missing.length === 0) return { ok: true, installMs: 0, installed: [] }
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    return { ok: false, reason: `Debian packages missing (${missing.join(', ')}) and not running as root to install them`, installMs: 0 }
  }
  const elapsed = stopwatch()
  log(`installing Debian packages: ${missing.join(' ')}`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  try {
    await run('apt-get', ['update', '-q'], { env, timeoutMs: 10 * 60_000 })
    await run('apt-get', ['install', '-y', '-q', ...missing], { env, timeoutMs: 15 * 60_000 })
  } catch (err) {
    return { ok: false, reason: `apt-get could not install ${missing.join(', ')}: ${err.message.split('\n')[0]}`, installMs: elapsed() }
  }
  const still = await missingPackages(names)
  if (still.length > 0) return { ok: false, reason: `still missing after apt-get: ${still.join(', ')}`, installMs: elapsed() }
  log(`Debian packages installed in ${seconds(elapsed())}`)
  return { ok: true, installMs: elapsed(), installed: missing }
}
