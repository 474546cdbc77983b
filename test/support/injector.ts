/**
 * Test-only peer that publishes scripted messages, good and bad (swarm and fault tiers).
 * It is a real peer (the same runtime as dist/peer.js, run from source with tsx) that takes
 * the peer's CLI flags and speaks the peer's IPC protocol (ready, status, envelopes), plus
 * these commands (each answered by {type:'inject-done', request_id, ...} or
 * {type:'inject-error', request_id, message}):
 *   inject-publish  {kind, body}          bus.publish (signed, stored, gossiped) -> {key, envelope, at}
 *   inject-many     {items:[{kind,body}]} publish in order -> {keys, at_first, at_last}
 *   inject-sign     {kind, body}          sign only, no checks -> {envelope}
 *   inject-raw      {topic, text}         gossip raw bytes as this peer -> {recipients (count), recipient_peers, at}
 *   inject-store    {kind, body}          sign and add to this peer's plan state only, no checks and
 *                                         no gossip, so it spreads by anti-entropy sync alone -> {key}
 *   inject-sync     {}                    sync with every connected peer now -> {sessions:[{peer, sent}]}
 *   inject-subscribers {topic}            the peers this GossipSub knows subscribed to topic -> {peers}
 * Start it with TestSwarm.start({ script: INJECTOR, execArgv: ['--import', 'tsx'], ... }) (peers.ts).
 */
import '../../src/peer/polyfill'
import { performance } from 'node:perf_hooks'
import { parseCli } from '../../src/peer/cli'
import { IpcChild, type IpcChannel } from '../../src/peer/ipc/child'
import { createLogger } from '../../src/peer/log'
import { loadOrCreateIdentity } from '../../src/peer/net/storage/identity'
import { startRuntime } from '../../src/peer/net/runtime'
import { submitOrResume } from '../../src/peer/resume'
import { publishOwnSplit } from '../../src/peer/ownSplit'
import { messageKey } from '../../src/plan/protocol/envelope'
import type { AnyEnvelope, BodyOf, Kind } from '../../src/plan/protocol/schemas'
import { signEnvelope } from '../../src/plan/protocol/signing'

const wallMs = (): number => performance.timeOrigin + performance.now()

interface Cmd { type: string, request_id: string, kind?: Kind, body?: unknown, items?: Array<{ kind: Kind, body: unknown }>, topic?: string, text?: string }

function isInjectCmd (m: unknown): m is Cmd {
  return typeof m === 'object' && m !== null && typeof (m as { type?: unknown }).type === 'string' &&
    (m as { type: string }).type.startsWith('inject-') && typeof (m as { request_id?: unknown }).request_id === 'string'
}

async function main (): Promise<void> {
  if (typeof process.send !== 'function') throw new Error('the injector runs as a forked child (TestSwarm.start({ script: INJECTOR }))')
  const cli = parseCli(process.argv.slice(2), { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s), env: process.env })
  if (cli.kind === 'exit') process.exit(cli.code)
  const config = cli.config
  const { log, forward } = createLogger({ format: config.logFormat, verbose: config.verbose })
  const runtime = await startRuntime(config, log)
  const { key } = await loadOrCreateIdentity(config.identityDir, config.name)
  const send = (m: unknown): void => { if (process.connected) process.send?.(m, undefined, undefined, () => {}) }

  // The regular peer protocol for everything that is not an injector command.
  const channel: IpcChannel = {
    send: (m, h, o, cb) => process.send?.(m, h, o, cb) ?? false,
    get connected () { return process.connected },
    on: ((event: 'message' | 'disconnect', fn: (m?: unknown) => void) => {
      if (event === 'message') process.on('message', (m) => { if (!isInjectCmd(m)) fn(m) })
      else process.on('disconnect', fn)
    }) as IpcChannel['on']
  }
  const stop = (): void => {
    setTimeout(() => process.exit(0), 1500).unref()
    void runtime.stop().then(() => process.exit(0))
  }
  const ipc = new IpcChild(channel, {
    submitGoal: async (text, budget, newPlan) => await submitOrResume(runtime, { text, budget: budget ?? null, newPlan }),
    cancelGoal: async (goalId, reason) => (await runtime.cancelGoal(goalId, reason)).goal_id,
    steer: async (rootId, action, target, note) => {
      const s = await runtime.steer(rootId, action, target, note)
      return { goalId: s.goal_id, round: s.round }
    },
    proposeSplit: async (goalId, subgoals, dependsOn) => (await publishOwnSplit(runtime, goalId, { subgoals, ...(dependsOn === undefined ? {} : { dependsOn }) })).proposal_id,
    getOutput: async (nodeId) => await runtime.getOutput(nodeId),
    status: () => {
      const s = runtime.status()
      return { peer_id: s.peer_id, role: config.role, capabilities: config.capabilities, connected_peers: s.connected_peers, drops: s.drops, state_size: s.state_size, unreachable_bootstraps: s.unreachable_bootstraps }
    },
    shutdown: stop
  }, log)
  ipc.listen()
  forward(null)
  process.on('SIGTERM', stop)

  process.on('message', (m) => {
    if (!isInjectCmd(m)) return
    const reply = (extra: Record<string, unknown>): void => { send({ type: 'inject-done', request_id: m.request_id, ...extra }) }
    const run = async (): Promise<void> => {
      switch (m.type) {
        case 'inject-publish': {
          const at = wallMs()
          const env = await runtime.bus.publish(m.kind as Kind, m.body as BodyOf<Kind>)
          reply({ key: messageKey(env), envelope: env, at })
          break
        }
        case 'inject-many': {
          const keys: string[] = []
          const atFirst = wallMs()
          for (const it of m.items ?? []) keys.push(messageKey(await runtime.bus.publish(it.kind, it.body as BodyOf<Kind>)))
          reply({ keys, at_first: atFirst, at_last: wallMs() })
          break
        }
        case 'inject-sign':
          reply({ envelope: await signEnvelope(key, m.kind as Kind, m.body as BodyOf<Kind>) })
          break
        case 'inject-raw': {
          const at = wallMs()
          const r = await runtime.node.services.pubsub.publish(m.topic as string, new TextEncoder().encode(m.text ?? ''))
          reply({ recipients: r.recipients.length, recipient_peers: r.recipients.map(String), at })
          break
        }
        case 'inject-store': {
          const env = await signEnvelope(key, m.kind as Kind, m.body as BodyOf<Kind>)
          runtime.state.add(env as AnyEnvelope)
          reply({ key: messageKey(env) })
          break
        }
        case 'inject-sync': {
          const sessions = await Promise.all(runtime.node.getPeers().map(async (p) => ({ peer: p.toString(), sent: (await runtime.sync.syncWith(p))?.sent ?? null })))
          reply({ sessions })
          break
        }
        case 'inject-subscribers':
          reply({ peers: runtime.node.services.pubsub.getSubscribers(m.topic as string).map(String) })
          break
        default:
          throw new Error(`unknown injector command ${m.type}`)
      }
    }
    run().catch((err: Error) => { send({ type: 'inject-error', request_id: m.request_id, message: err.message }) })
  })

  ipc.ready({ peer_id: runtime.peerId, role: config.role, swarm: config.swarm, listen: runtime.listenAddrs() }, runtime.state.envelopes(), (fn) => runtime.bus.onMessage(fn))
}

main().catch((err: Error) => {
  process.stderr.write(`injector: ${err.stack ?? err.message}\n`)
  process.exit(1)
})
