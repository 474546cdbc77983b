/**
 * SyncGate (DESIGN R5 "No claim before a first sync"): an executor's gate stays closed until a
 * sync session with a peer has completed, or until no peer at all has been connected for the
 * grace period (logged as claiming alone); a connected peer that never syncs keeps it closed.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import type { PeerSyncView } from '../../src/peer/roles/context'
import { SyncGate } from '../../src/peer/roles/syncGate'
import { captureLogger } from '../support/memory-bus'
import { waitUntil } from '../support/wait'

/** A sync view whose figures the test sets, and whose onSynced the test fires. */
class FakeSync implements PeerSyncView {
  synced = 0
  connected = 0
  private readonly listeners = new Set<(peer: string) => void>()
  syncedPeers (): number { return this.synced }
  connectedPeers (): number { return this.connected }
  onSynced (listener: (peer: string) => void): { dispose(): void } {
    this.listeners.add(listener)
    return { dispose: () => { this.listeners.delete(listener) } }
  }

  fire (peer: string): void {
    this.synced++
    for (const l of [...this.listeners]) l(peer)
  }

  get listenerCount (): number { return this.listeners.size }
}

function gate (sync: PeerSyncView | undefined, graceMs: number): { gate: SyncGate, opened: () => number, records: ReturnType<typeof captureLogger>['records'] } {
  const { log, records } = captureLogger('executor')
  let opened = 0
  const g = new SyncGate(sync, graceMs, log, (closed) => closed ? 3 : 2, () => { opened++ })
  return { gate: g, opened: () => opened, records }
}

describe('SyncGate (DESIGN R5)', () => {
  it('is open at once without a sync view, or when a sync already completed', () => {
    assert.equal(gate(undefined, 1000).gate.open, true)
    const s = new FakeSync()
    s.synced = 1
    const g = gate(s, 1000)
    assert.equal(g.gate.open, true)
    assert.equal(g.opened(), 0, 'nothing to announce: it never was closed')
    assert.equal(s.listenerCount, 0)
  })

  it('stays closed while a peer is connected but no sync completed, past the grace; a sync opens it once', async () => {
    const s = new FakeSync()
    s.connected = 1
    const g = gate(s, 30)
    try {
      assert.equal(g.gate.open, false)
      assert.equal(g.records[0]?.event, 'claims_held')
      assert.equal(g.records[0]?.grace_ms, 30)
      assert.equal(g.records[0]?.leaves, 3, 'the leaves it could run without a result')
      await delay(150)
      assert.equal(g.gate.open, false, 'a connected peer is not being alone')
      s.fire('peer-b')
      assert.equal(g.gate.open, true)
      s.fire('peer-c')
      assert.equal(g.opened(), 1)
      const line = g.records.find((r) => r.event === 'claims_open')
      assert.equal(line?.how, 'synced')
      assert.equal(line?.synced_with, 'peer-b')
      assert.equal(line?.leaves, 2, 'the leaves open for it')
      assert.equal(line?.level, 30)
      assert.equal(s.listenerCount, 0, 'it stops listening once open')
    } finally {
      g.gate.dispose()
    }
  })

  it('opens after the grace with no peer connected, as a warning that it claims alone', async () => {
    const s = new FakeSync()
    const g = gate(s, 60)
    try {
      assert.equal(g.gate.open, false)
      await waitUntil('the gate to open', () => g.gate.open, 5000)
      assert.equal(g.opened(), 1)
      const line = g.records.find((r) => r.event === 'claims_open')
      assert.equal(line?.level, 40)
      assert.equal(line?.how, 'alone')
      assert.equal(line?.grace_ms, 60)
      assert.equal(line?.leaves, 2)
      assert.ok(typeof line?.alone_ms === 'number' && line.alone_ms >= 60, `alone_ms ${String(line?.alone_ms)}`)
    } finally {
      g.gate.dispose()
    }
  })

  it('counts being alone from when the last peer went away', async () => {
    const s = new FakeSync()
    s.connected = 1
    const g = gate(s, 300)
    try {
      await delay(400)
      assert.equal(g.gate.open, false)
      s.connected = 0
      const gone = performance.now()
      await waitUntil('the gate to open', () => g.gate.open, 5000)
      const alone = performance.now() - gone
      assert.ok(alone >= 300, `opened ${alone.toFixed(0)} ms after the last peer left, before the 300 ms grace`)
    } finally {
      g.gate.dispose()
    }
  })
})
