/**
 * What a failed start removes (src/peer/net/storage/startUndo.ts): only what appeared since it began,
 * and of that only what it owned: its key and its data dir when it held their locks, and
 * folders it made while they are empty. Real files in a temp dir.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { spawn } from 'node:child_process'
import { ensureDir, firstFreeIdentity } from '../../src/peer/net/storage/dataDir'
import { recordStart } from '../../src/peer/net/storage/startUndo'

const tmp = mkdtempSync(path.join(os.tmpdir(), 'gs-undo-'))
after(() => { rmSync(tmp, { recursive: true, force: true }) })

describe('a failed start undoes what it created', () => {
  it('a fresh folder: key, data dir and the folders above them go', () => {
    const base = path.join(tmp, 'fresh', '.goal-swarm')
    const config = { dataDir: path.join(base, 'observer-0'), identityDir: path.join(base, 'identities'), name: 'observer-0' }
    const undo = recordStart(config)
    mkdirSync(config.dataDir, { recursive: true })
    mkdirSync(path.join(config.dataDir, 'blobs'))
    mkdirSync(config.identityDir)
    writeFileSync(path.join(config.identityDir, 'observer-0.key'), 'k')
    assert.deepEqual(undo({ dataDir: true, identity: true }), [path.join(config.identityDir, 'observer-0.key'), config.dataDir, config.identityDir, base, path.join(tmp, 'fresh')])
    assert.equal(existsSync(path.join(tmp, 'fresh')), false)
  })

  it('another peer\'s key, data dir and lock stay', () => {
    const base = path.join(tmp, 'shared')
    const config = { dataDir: path.join(base, 'scorer-0'), identityDir: path.join(base, 'ids'), name: 'scorer-0' }
    const undo = recordStart(config)
    // A peer started at the same moment made the same folders and holds their locks.
    mkdirSync(config.dataDir, { recursive: true })
    writeFileSync(path.join(config.dataDir, 'LOCK'), '1')
    mkdirSync(config.identityDir)
    writeFileSync(path.join(config.identityDir, 'scorer-0.key'), 'k')
    writeFileSync(path.join(config.identityDir, 'scorer-0.key.lock'), '1')
    assert.deepEqual(undo({ dataDir: false, identity: false }), [])
    assert.deepEqual(readdirSync(config.identityDir).sort(), ['scorer-0.key', 'scorer-0.key.lock'])
    assert.deepEqual(readdirSync(config.dataDir), ['LOCK'])
  })

  it('a key and data dir from an earlier run stay', () => {
    const config = { dataDir: path.join(tmp, 'old', 'data'), identityDir: path.join(tmp, 'old', 'ids'), name: 'x' }
    mkdirSync(config.dataDir, { recursive: true })
    mkdirSync(config.identityDir)
    writeFileSync(path.join(config.identityDir, 'x.key'), 'k')
    assert.deepEqual(recordStart(config)({ dataDir: true, identity: true }), [])
    assert.equal(existsSync(path.join(config.identityDir, 'x.key')), true)
  })
})

describe('the default identity on --port 0', () => {
  it('is the first <role>-N whose key lock and data dir lock no live process holds', () => {
    const ids = path.join(tmp, 'free', 'ids')
    const dataOf = (n: string): string => path.join(tmp, 'free', n)
    assert.equal(firstFreeIdentity(ids, 'executor', dataOf), 'executor-0')
    mkdirSync(ids, { recursive: true })
    // The parent of this test process is alive; pid 2^22 + 1 is past Linux's pid range, so never alive.
    writeFileSync(path.join(ids, 'executor-0.key.lock'), String(process.ppid))
    assert.equal(firstFreeIdentity(ids, 'executor', dataOf), 'executor-1')
    mkdirSync(dataOf('executor-1'))
    writeFileSync(path.join(dataOf('executor-1'), 'LOCK'), String(process.ppid))
    assert.equal(firstFreeIdentity(ids, 'executor', dataOf), 'executor-2')
    assert.equal(firstFreeIdentity(ids, 'executor', null), 'executor-1', 'with --data-dir given, only key locks count')
    writeFileSync(path.join(ids, 'executor-0.key.lock'), String(2 ** 22 + 1))
    assert.equal(firstFreeIdentity(ids, 'executor', dataOf), 'executor-0', 'a lock a dead process left is free')
  })
})

describe('folders made by peers started side by side', () => {
  it('each of several processes making the same new folders at the same moment succeeds', async () => {
    const dir = path.join(tmp, 'side-by-side', '.goal-swarm', 'identities', 'x')
    const dataDirUrl = new URL('../../src/peer/net/storage/dataDir.ts', import.meta.url).href
    // Every child spins until one shared moment, then makes the same four missing folders.
    const at = Date.now() + 1500
    const script = `const { ensureDir } = await import(${JSON.stringify(dataDirUrl)}); while (Date.now() < ${at}) {}
      try { ensureDir(${JSON.stringify(dir)}); console.log('ok') } catch (err) { console.log(err.code ?? String(err)) }`
    const outcomes = await Promise.all(Array.from({ length: 6 }, async () => await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      child.stdout.on('data', (b: Buffer) => { out += b.toString() })
      child.on('error', reject)
      child.on('exit', () => { resolve(out.trim()) })
    })))
    assert.deepEqual(outcomes, Array(6).fill('ok'))
    assert.equal(existsSync(dir), true)
  })

  it('a file in the way of a folder to make is still an error', () => {
    const file = path.join(tmp, 'in-the-way')
    writeFileSync(file, 'x')
    assert.throws(() => { ensureDir(path.join(file, 'below')) }, { code: 'ENOTDIR' })
  })
})
