/** Sandboxed code execution for can_run_code leaves (DESIGN "Code execution"). */
export { detectSandbox, type SandboxDetection, type SandboxTools } from './detect'
export { DEFAULT_SANDBOX_LIMITS, sandboxLimits, SANDBOX_LIMIT_RANGES, type SandboxLimits } from './limits'
export { LANGUAGES, MAX_PROGRAM_CHARS, runInSandbox, SandboxError, type Language, type LimitHit, type SandboxRun } from './run'
export { runMarkdown } from './markdown'
