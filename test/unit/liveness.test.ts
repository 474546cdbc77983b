import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEFAULTS } from '../../src/peer/config'
import { ANNOUNCE_HEARTBEAT_MS, capabilityTtlMs } from '../../src/peer/protocol/liveness'
import { DEFAULT_CAPABILITY_TTL_MS } from '../../src/peer/state/tree'

describe('capability liveness (DESIGN §6 announcements)', () => {
  it('an announcement lives three heartbeats, never less than on the default heartbeat', () => {
    assert.equal(capabilityTtlMs(), 3 * ANNOUNCE_HEARTBEAT_MS)
    assert.equal(capabilityTtlMs(60_000), 180_000)
    assert.equal(capabilityTtlMs(1000), 3 * ANNOUNCE_HEARTBEAT_MS, 'a fast local heartbeat does not shorten others\' liveness')
  })

  it('the peer default heartbeat and the tree\'s default TTL follow the same rule', () => {
    assert.equal(DEFAULTS.announceIntervalMs, ANNOUNCE_HEARTBEAT_MS)
    assert.equal(DEFAULT_CAPABILITY_TTL_MS, capabilityTtlMs(DEFAULTS.announceIntervalMs))
  })
})
