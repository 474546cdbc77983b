/**
 * A stable listen port per identity: with `goalSwarm.listenPort` 0 the first start takes any
 * free port and records it next to the identity key; later starts ask for the same port again,
 * so an address pasted into another editor's bootstrap list stays valid across restarts. When
 * the remembered port is taken, the peer takes a new free port (and that one is remembered).
 */
import { writeFile, readFile, rename } from 'node:fs/promises'
import { createServer } from 'node:net'

/** The remembered port in `file` (a decimal number), or undefined when none or unreadable. */
export async function rememberedPort (file: string): Promise<number | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined)
  const n = Number(text?.trim())
  return Number.isInteger(n) && n > 0 && n <= 65535 ? n : undefined
}

/** Records `port` in `file` (written to a temp file, then renamed, so a reader never sees half). */
export async function rememberPort (file: string, port: number): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`
  await writeFile(tmp, `${port}\n`, { mode: 0o600 })
  await rename(tmp, file)
}

/** Whether a TCP listener could bind `host:port` right now (probe: bind, then close). */
export function portIsFree (host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)))
  })
}

/**
 * The port to start with: `configured` when not 0, else the remembered port when it is free,
 * else 0 (any free port).
 */
export async function choosePort (configured: number, host: string, file: string): Promise<number> {
  if (configured !== 0) return configured
  const kept = await rememberedPort(file)
  if (kept === undefined) return 0
  return (await portIsFree(host, kept)) ? kept : 0
}
