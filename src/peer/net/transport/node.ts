/**
 * The libp2p node of a peer (DESIGN "Dependencies"): TCP,
 * noise, yamux, identify (GossipSub needs it), GossipSub with StrictSign, optional mDNS, an
 * optional pre-shared swarm key, and circuit relay v2 (DESIGN "Topology"): an anchor serves
 * relay reservations, a member with anchors reserves a slot on them and runs DCUtR and AutoNAT
 * v2 (holePunch.ts watches them). Discovery dialling lives in dialer.ts.
 */
import { autoNATv2 } from '@libp2p/autonat-v2'
import { circuitRelayServer, circuitRelayTransport, type CircuitRelayService } from '@libp2p/circuit-relay-v2'
import { dcutr } from '@libp2p/dcutr'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import { fastMessageId } from './gossipIds'
import type { ConnectionGater, Libp2p, PeerDiscovery, PeerId, PeerInfo, PrivateKey } from '@libp2p/interface'
import { mdns, type MulticastDNSComponents } from '@libp2p/mdns'
import { noise } from '@libp2p/noise'
import { preSharedKey } from '@libp2p/pnet'
import { tcp } from '@libp2p/tcp'
import { yamux } from '@libp2p/yamux'
import { createLibp2p } from 'libp2p'
import { isIPv6 } from 'node:net'

export type PeerNode = Libp2p<{ identify: unknown, pubsub: GossipSub, relay?: CircuitRelayService }>

/**
 * Relay reservations an anchor holds at once: one per member behind NAT. The library's 15 would
 * refuse the sixteenth member of a swarm.
 */
export const ANCHOR_MAX_RESERVATIONS = 1024

/**
 * Gossip frames up to this size are read, so an envelope over verify.ts MAX_ENVELOPE_BYTES
 * reaches the validator and is counted too_large there; a bigger frame closes the sender's
 * gossip stream and is counted by oversizeFrames.ts.
 */
export const GOSSIP_MAX_RPC_BYTES = 4 * 1024 * 1024

export interface NodeOptions {
  privateKey: PrivateKey
  host: string
  port: number
  /** Swarm key file bytes (swarmKey.ts readSwarmKey), or null for an open swarm. */
  psk: Uint8Array | null
  mdns: { intervalMs: number, onPeer: (peer: PeerInfo) => void } | null
  /** Serve circuit relay v2 reservations (an anchor, --role anchor). */
  relayServer: boolean
  /** Relay slots to reserve, one per --anchor (0: dial relayed addresses, reserve nothing). */
  relaySlots: number
  /**
   * DCUtR (upgrade a relayed connection to a direct one by hole punching) and AutoNAT v2 (learn
   * whether this peer's addresses are reachable): for a member with anchors; a LAN peer needs
   * neither.
   */
  holePunch?: boolean
  /**
   * An anchor's rule for who may use its relay (reserve a slot, or be relayed to or from):
   * resolves true for a member of this swarm. Without it the relay serves every peer that
   * connects.
   */
  relayMember?: (peer: PeerId) => Promise<boolean>
}

const isWildcard = (host: string): boolean => host === '0.0.0.0' || host === '::'

/**
 * The relay server's gate (libp2p ConnectionGater): a reservation only for a member, a relayed
 * connection only between two members (the relay already requires the destination's slot).
 */
function relayGate (member: (peer: PeerId) => Promise<boolean>): ConnectionGater {
  return {
    denyInboundRelayReservation: async (source) => !(await member(source)),
    denyOutboundRelayedConnection: async (source, destination) => !(await member(source)) || !(await member(destination))
  }
}

/**
 * Creates the node, not yet started (so handlers and validators are in place before the
 * first connection).
 */
export async function createPeerNode (opts: NodeOptions): Promise<PeerNode> {
  const peerDiscovery: Array<(components: MulticastDNSComponents) => PeerDiscovery> = []
  const mdnsOpts = opts.mdns
  if (mdnsOpts !== null) {
    const make = mdns({ interval: mdnsOpts.intervalMs, serviceTag: '_goal-swarm._udp.local' })
    // libp2p 3 does not dial what mDNS finds, and emits peer:discovery only once per peer-store
    // entry (a restarted peer would be missed): listen to every sighting instead.
    peerDiscovery.push((components) => {
      const d = make(components)
      d.addEventListener('peer', (e) => { mdnsOpts.onPeer(e.detail) })
      return d
    })
  }
  const ip = isIPv6(opts.host) ? 'ip6' : 'ip4'
  return await createLibp2p({
    start: false,
    privateKey: opts.privateKey,
    // Each bare /p2p-circuit asks the relay transport for one reservation on a connected peer
    // that speaks the relay hop protocol: an anchor the dialer reached. A lost anchor that is
    // dialled again is reserved on again, so the address returns after an anchor restart.
    addresses: {
      listen: [`/${ip}/${opts.host}/tcp/${opts.port}`, ...Array.from({ length: opts.relaySlots }, () => '/p2p-circuit')],
      // libp2p lists a public address only once AutoNAT verified it, so an anchor on a public IP
      // would list none and give members nothing to dial. An anchor is reachable by definition.
      ...(opts.relayServer && opts.port > 0 && !isWildcard(opts.host) ? { appendAnnounce: [`/${ip}/${opts.host}/tcp/${opts.port}`] } : {})
    },
    // Every peer can dial a relayed address (a member behind NAT announces only that).
    transports: [tcp(), circuitRelayTransport({ reservationCompletionTimeout: 10_000 })],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    ...(opts.psk === null ? {} : { connectionProtector: preSharedKey({ psk: opts.psk }) }),
    peerDiscovery,
    connectionManager: {
      maxConnections: 300,
      // On one machine every peer dials from the same IP; the default (5/s per host) would
      // refuse a swarm starting at once.
      inboundConnectionThreshold: 10_000,
      maxIncomingPendingConnections: 128
    },
    ...(opts.relayServer && opts.relayMember !== undefined ? { connectionGater: relayGate(opts.relayMember) } : {}),
    // A busy 2-core machine can miss a ping deadline; a dead peer's TCP connection closes anyway.
    connectionMonitor: { abortConnectionOnPingFailure: false },
    services: {
      identify: identify(),
      ...(opts.relayServer
        ? {
            relay: circuitRelayServer({
              // With a swarm key only key holders reach the anchor at all (pnet runs below the
              // relay), so its members get slots without the default limits (2 min, 128 KiB per
              // relayed connection), which would reset their relayed streams mid-plan. An open
              // swarm's anchor relays for whoever connects: it keeps js-libp2p's default limits
              // and reservation count, and its members' gossip and sync still flow through the
              // anchor's own (unlimited) connections when a relayed one hits a limit.
              reservations: opts.psk !== null ? { maxReservations: ANCHOR_MAX_RESERVATIONS, applyDefaultLimit: false } : {}
            })
          }
        : {}),
      ...(opts.holePunch === true ? { dcutr: dcutr(), autoNAT: autoNATv2() } : {}),
      pubsub: gossipsub({
        globalSignaturePolicy: 'StrictSign',
        // A relay of another implementation may still limit relayed connections; gossip must
        // run on them (a member behind NAT has no other).
        runOnLimitedConnection: true,
        // GossipSub checks a message's signature before its seen cache, so every copy a peer's
        // mesh neighbours relay would be verified again. StrictSign's message id is the author
        // key and seqno; the same pair as a fast id lets duplicates skip verification. Only a
        // copy that passed verification enters the fast-id cache, so a forged copy cannot
        // shadow the real message.
        fastMsgIdFn: fastMessageId,
        // Own messages are delivered locally by the bus (before gossip), not echoed.
        emitSelf: false,
        // Publishing before anyone subscribed must not throw; sync delivers it later.
        allowPublishToZeroTopicPeers: true,
        ignoreDuplicatePublishError: true,
        // Tuned for 3-50 peers: mesh degree 6 (4..12), flood own messages to every subscriber
        // so small swarms deliver in one hop, 700 ms heartbeat for quicker mesh repair.
        D: 6,
        Dlo: 4,
        Dhi: 12,
        floodPublish: true,
        heartbeatInterval: 700,
        // IDONTWANT goes to every mesh peer for each message at least this big. For our small
        // signed envelopes one control frame per mesh peer cost more CPU (encrypt, write, decrypt
        // on the far side) than the duplicates it saves, which the fast id drops unverified;
        // large inline results still get it.
        idontwantMinDataSize: 16 * 1024,
        maxInboundDataLength: GOSSIP_MAX_RPC_BYTES,
        // Peers on one machine all connect from loopback. GossipSub's IP colocation penalty
        // (-5 x (peers - 10)^2 beyond 10 peers per IP) puts every peer of a local swarm of ~15
        // below the publish and graylist thresholds, which silences gossip (benchmark "scale",
        // docs/BENCHMARKS.md). Loopback is exempt; LAN addresses keep the Sybil protection.
        scoreParams: { IPColocationFactorWhitelist: new Set(['127.0.0.1', '::1']) },
        maxOutboundBufferSize: 64 * 1024 * 1024,
        // A swarm has two topics (protocol/topics.ts); the bound only caps what a peer may send.
        decodeRpcLimits: { maxSubscriptions: 1024, maxMessages: 5000, maxIhaveMessageIDs: 5000, maxIwantMessageIDs: 5000, maxControlMessages: 5000, maxIdontwantMessageIDs: 512, maxPeerInfos: 16 }
      })
    }
  }) as unknown as PeerNode
}
