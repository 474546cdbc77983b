// Child script of test/unit/llm-lazy.test.ts: creates the provider named by argv[2] (anthropic
// or openai-compatible) against the stand-in at argv[3] and, unless argv[4] is 'no-call',
// makes one text call. Prints the reply (or "no call") on stdout.
import { createProvider } from '../../src/peer/llm/index'

const [provider, url, mode] = process.argv.slice(2) as ['anthropic' | 'openai-compatible', string, string | undefined]
const llm = createProvider({ provider, model: provider === 'anthropic' ? null : 'standin-model', baseUrl: url, apiKey: 'standin-test-key', maxRetries: 0, retryBaseMs: 10 })
if (mode === 'no-call') {
  process.stdout.write(`no call (${llm.name}, ${llm.model})\n`)
} else {
  process.stdout.write(`${await llm.generateText({ purpose: 'execute', system: '', prompt: 'Task: say hello' })}\n`)
}
