// Durable writes of the peer's files: replaced whole or not at all, no temp file left behind on
// failure or when the process is interrupted (SIGINT ends a peer through process.exit).
import { after, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { appendFileDurable, LatestFileWriter, sweepStaleTemps, writeFileDurable, writeFileDurableSync } from '../../src/peer/net/storage/durableFile'
import { lockDataDir } from '../../src/peer/net/storage/dataDir'

const base = mkdtempSync(path.join(os.tmpdir(), 'gs-durable-'))
after(() => { rmSync(base, { recursive: true, force: true }) })
let n = 0
const freshDir = (): string => { const d = path.join(base, String(++n)); mkdirSync(d); return d }

describe('durable file writes', () => {
  test('replace the whole file, leave only the target', async () => {
    const dir = freshDir()
    const file = path.join(dir, 'report.md')
    writeFileSync(file, 'old report')
    await writeFileDurable(file, '# new report\n')
    assert.equal(readFileSync(file, 'utf8'), '# new report\n')
    writeFileDurableSync(file, Buffer.from('final'))
    assert.equal(readFileSync(file, 'utf8'), 'final')
    assert.deepEqual(readdirSync(dir), ['report.md'])
  })

  test('a failed write throws, keeps the target and leaves no temp file', async () => {
    const dir = freshDir()
    const target = path.join(dir, 'blob')
    mkdirSync(target) // a directory where the file should go: the rename fails
    writeFileSync(path.join(target, 'inside'), 'kept')
    await assert.rejects(writeFileDurable(target, 'data'), (e: NodeJS.ErrnoException) => typeof e.code === 'string')
    assert.throws(() => writeFileDurableSync(target, 'data'), (e: NodeJS.ErrnoException) => typeof e.code === 'string')
    assert.deepEqual(readdirSync(dir), ['blob'])
    assert.equal(readFileSync(path.join(target, 'inside'), 'utf8'), 'kept')
  })

  test('appends add to the end', async () => {
    const dir = freshDir()
    const file = path.join(dir, 'state.jsonl')
    await appendFileDurable(file, 'a\n')
    await appendFileDurable(file, 'b\n')
    assert.equal(readFileSync(file, 'utf8'), 'a\nb\n')
  })

  test('SIGINT during writes (exit through process.exit) leaves no temp file', async () => {
    const dir = freshDir()
    const file = path.join(dir, 'big.bin')
    const mod = path.resolve('src/peer/net/storage/durableFile.ts')
    // Large writes in a loop, so one is in flight when the signal lands.
    const script = `
      const { writeFileDurable } = await import(${JSON.stringify(mod)})
      process.on('SIGINT', () => process.exit(130))
      const data = Buffer.alloc(8 * 1024 * 1024, 7)
      let first = true
      for (;;) {
        const w = writeFileDurable(${JSON.stringify(file)}, data)
        if (first) { first = false; process.stdout.write('writing\\n') }
        await w
      }`
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => { if (d.toString().includes('writing')) resolve() })
      child.once('exit', () => reject(new Error('the writer exited before writing')))
    })
    child.kill('SIGINT')
    assert.equal(await exited, 130)
    const left = readdirSync(dir).filter((f) => f.endsWith('.tmp'))
    assert.deepEqual(left, [])
  })

  test('a temp file still being created when the process exits is not left behind', async () => {
    // The exit hook cannot wait for the thread pool, so a temp file created there after the hook
    // ran would stay. The child has one pool thread (UV_THREADPOOL_SIZE=1), blocked opening a FIFO
    // nobody writes yet, so the write's first step queues behind it, as behind slow fsyncs of a
    // busy disk; it exits through process.exit. An exit listener after the module's hook then
    // frees the thread and waits until a mkdir queued after the write has run: by then every step
    // the write had queued has run too.
    const dir = freshDir()
    const file = path.join(dir, 'kept-results.json')
    const fifo = path.join(dir, 'pool-blocker')
    const marker = path.join(dir, 'queue-drained')
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo')
    const mod = path.resolve('src/peer/net/storage/durableFile.ts')
    const script = `
      import { closeSync, existsSync, openSync } from 'node:fs'
      import { mkdir, open } from 'node:fs/promises'
      const { writeFileDurable } = await import(${JSON.stringify(mod)})
      void open(${JSON.stringify(fifo)}, 'r')
      void writeFileDurable(${JSON.stringify(file)}, 'finished work')
      void mkdir(${JSON.stringify(marker)})
      process.on('exit', () => {
        closeSync(openSync(${JSON.stringify(fifo)}, 'w'))
        const deadline = Date.now() + 10_000
        while (!existsSync(${JSON.stringify(marker)}) && Date.now() < deadline) { /* an exit listener cannot await */ }
      })
      process.exit(130)`
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, UV_THREADPOOL_SIZE: '1' } })
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
    assert.equal(code, 130)
    assert.ok(existsSync(marker), 'the work queued behind the blocked thread ran before the process ended')
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.tmp')), [])
  })

  test('temp files of a writer that is gone (kill -9 mid-write) are swept when the data dir is next locked', () => {
    const dir = freshDir()
    mkdirSync(path.join(dir, 'blobs'))
    const dead = 2 ** 22 + 12345 // above the kernel's pid_max default: no such process
    const blob = 'ab'.repeat(32)
    writeFileSync(path.join(dir, `state.jsonl.${dead}.3.tmp`), 'half a line')
    writeFileSync(path.join(dir, `state.jsonl.corrupt-2026-12-01T18-53-31-867Z.${dead}.1.tmp`), 'half a set-aside copy')
    writeFileSync(path.join(dir, 'blobs', `${blob}.${dead}.1.tmp`), 'half a blob')
    writeFileSync(path.join(dir, `state.jsonl.${process.pid}.9.tmp`), 'a write of this process, in flight')
    // Not names the peer writes: never removed, whatever they look like.
    for (const other of ['notes.tmp', `notes.${dead}.1.tmp`, `report.md.${dead}.2.tmp`]) writeFileSync(path.join(dir, other), 'the user\'s')
    let swept: string[] = []
    const release = lockDataDir(dir, (paths) => { swept = paths })
    try {
      assert.deepEqual(readdirSync(dir).sort(), ['LOCK', 'blobs', `notes.${dead}.1.tmp`, 'notes.tmp', `report.md.${dead}.2.tmp`, `state.jsonl.${process.pid}.9.tmp`])
      assert.deepEqual(readdirSync(path.join(dir, 'blobs')), [])
      assert.equal(swept.length, 3, `the removed files are reported: ${swept.join(', ')}`)
    } finally {
      release()
    }
    assert.deepEqual(sweepStaleTemps(dir, () => true), [], 'a live writer\'s temp files are left alone')
  })

  describe('LatestFileWriter: the newest data wins', () => {
    test('a burst of writes ends with the last one on disk; writes queued behind a newer one are skipped', async () => {
      const dir = freshDir()
      const w = new LatestFileWriter(path.join(dir, 'report.md'))
      const written = await Promise.all(Array.from({ length: 50 }, async (_, i) => await w.write(`report ${i}\n`)))
      assert.equal(readFileSync(path.join(dir, 'report.md'), 'utf8'), 'report 49\n')
      assert.equal(written.at(-1), true)
      assert.ok(written.filter(Boolean).length < 50, `superseded writes are skipped: ${written.filter(Boolean).length} of 50 written`)
      assert.equal(w.busy, false)
      assert.deepEqual(readdirSync(dir), ['report.md'])
    })

    test('an older write still in flight never lands after a newer synchronous one', async () => {
      const dir = freshDir()
      const file = path.join(dir, 'report.md')
      const w = new LatestFileWriter(file)
      // The older write's temp file appearing proves it is past its start and under way.
      const watcher = watch(dir)
      const started = new Promise<void>((resolve) => { watcher.on('change', (_e, name) => { if (String(name).endsWith('.tmp')) resolve() }) })
      const older = w.write(Buffer.alloc(32 * 1024 * 1024, 0x61))
      assert.equal(w.busy, true)
      await started
      watcher.close()
      w.writeSync('final\n')
      assert.equal(await older, false, 'the overtaken write reports that it was superseded')
      assert.equal(readFileSync(file, 'utf8'), 'final\n')
      assert.deepEqual(readdirSync(dir), ['report.md'], 'its temp file is removed')
    })

    test('a newer asynchronous write overtakes one queued or running before it', async () => {
      const dir = freshDir()
      const file = path.join(dir, 'report.md')
      const w = new LatestFileWriter(file)
      const first = w.write(Buffer.alloc(8 * 1024 * 1024, 0x61))
      const second = w.write('second\n')
      const third = w.write('third\n')
      assert.deepEqual(await Promise.all([first, second, third]), [false, false, true])
      assert.equal(readFileSync(file, 'utf8'), 'third\n')
    })
  })
})
