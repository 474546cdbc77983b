// Small process and logging helpers shared by the real-editor test harness.
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'

const started = Date.now()

/** Prints one harness line to stdout, prefixed with seconds since the harness started. */
export function log (message) {
  console.log(`[vscode ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${message}`)
}

/** Returns a function that gives the ms elapsed since this call. */
export function stopwatch () {
  const t0 = Date.now()
  return () => Date.now() - t0
}

/** Formats ms as seconds with one decimal, e.g. "12.3 s". */
export function seconds (ms) {
  return `${(ms / 1000).toFixed(1)} s`
}

/**
 * Runs a command to completion. Output is captured (and echoed when `echo` is true).
 * Resolves `{ code, stdout, stderr }`; rejects with the captured tail when the exit code is
 * non-zero (unless `allowFailure`) or when `timeoutMs` passes (the child is then killed by pid).
 */
export function run (command, args, { cwd, env, echo = false, allowFailure = false, timeoutMs = 15 * 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d; if (echo) process.stdout.write(d) })
    child.stderr.on('data', (d) => { stderr += d; if (echo) process.stderr.write(d) })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${command} ${args.join(' ')} timed out after ${seconds(timeoutMs)}`))
    }, timeoutMs)
    child.on('error', (err) => { clearTimeout(timer); reject(err) })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0 || allowFailure) return resolve({ code, stdout, stderr })
      const tail = (stdout + stderr).split('\n').slice(-40).join('\n')
      reject(new Error(`${command} ${args.join(' ')} exited with ${code ?? signal}\n${tail}`))
    })
  })
}

/** True while a process with this pid exists (signal 0 probes without signalling). */
export function isAlive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

/**
 * Stops a process we spawned as a process-group leader (spawn `detached: true`): SIGTERM to the
 * group, then SIGKILL to the group after `graceMs` if the leader is still alive. The group also
 * holds what the process started (code-server's server child, extension hosts, peer children),
 * which must not outlive a test run. Resolves true when the leader is gone.
 */
export async function killGroup (pid, graceMs = 5000) {
  const signal = (sig) => {
    try { process.kill(-pid, sig) } catch { /* group already gone */ }
    try { process.kill(pid, sig) } catch { /* leader already gone */ }
  }
  if (!isAlive(pid)) { signal('SIGKILL'); return true }
  signal('SIGTERM')
  for (let waited = 0; waited < graceMs; waited += 100) {
    if (!isAlive(pid)) break
    await sleep(100)
  }
  // Group members that ignored SIGTERM (or the leader) get SIGKILL either way.
  signal('SIGKILL')
  for (let waited = 0; waited < 2000 && isAlive(pid); waited += 100) await sleep(100)
  return !isAlive(pid)
}
