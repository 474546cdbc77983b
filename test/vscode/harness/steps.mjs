// A user journey is one sequence where each step needs the one before, so the UI suite runs its
// checks in order and stops at the first failure (the steps after it are reported as skipped).
import { log, seconds, stopwatch } from './util.mjs'

/**
 * Runs `steps` (`{ name, timeoutMs?, run(): Promise<void> }`) in order. On a failure, `onFailure`
 * (e.g. a screenshot) runs once and the remaining steps are skipped.
 * Resolves `{ passed, failed, skipped, results: { name, status, ms, error? }[] }`.
 */
export async function runSteps (suite, steps, { onFailure } = {}) {
  const results = []
  let failedAt = -1
  for (const [i, step] of steps.entries()) {
    if (failedAt >= 0) {
      results.push({ name: step.name, status: 'skipped', ms: 0 })
      log(`${suite}: - ${step.name} (skipped)`)
      continue
    }
    const elapsed = stopwatch()
    const timeoutMs = step.timeoutMs ?? 60_000
    let timer
    try {
      await Promise.race([
        step.run(),
        new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${seconds(timeoutMs)}`)), timeoutMs) })
      ])
      results.push({ name: step.name, status: 'passed', ms: elapsed() })
      log(`${suite}: ✔ ${step.name} (${seconds(elapsed())})`)
    } catch (err) {
      failedAt = i
      results.push({ name: step.name, status: 'failed', ms: elapsed(), error: err })
      log(`${suite}: ✖ ${step.name} (${seconds(elapsed())})\n    ${String(err?.stack ?? err).split('\n').slice(0, 8).join('\n    ')}`)
      if (onFailure) await onFailure(step, err).catch((e) => log(`${suite}: failure hook failed: ${e.message}`))
    } finally {
      clearTimeout(timer)
    }
  }
  const count = (status) => results.filter((r) => r.status === status).length
  return { passed: count('passed'), failed: count('failed'), skipped: count('skipped'), results }
}
