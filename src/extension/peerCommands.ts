/**
 * Commands that start and stop this editor's peers: the main peer, a contributed executor, a
 * local swarm, and connecting to another editor (Copy My Address / Connect to Peer...).
 */
import * as vscode from 'vscode'
import { CAPABILITIES, type Capability } from '../plan/protocol/schemas'
import { peerAddressProblem, relayedAddresses, shareableAddress } from './address'
import { Commands } from './commandIds'
import { CommandFeature, type CommandDeps } from './commandRegistry'
import type { ReadyInfo } from './peerProcess'
import { DEFAULT_LOCAL_SWARM, type LocalSwarmSize } from './peers'
import { recordStarted } from './restore'
import { leavesOf } from '../views/planModel'
import { stoppedContributingMessage } from '../views/messages'
import type { SynthesisView, TreeNode } from '../plan/read/tree'

/** Every synthesis task in a tree (a goal's parts combined), depth first. */
function walkSyntheses (n: TreeNode): SynthesisView[] {
  if (n.kind === 'leaf') return []
  return [...(n.synthesis === null ? [] : [n.synthesis]), ...n.children.flatMap(walkSyntheses)]
}
import { effectiveProvider, Keys } from './settings'
import { connectedPeerLabel, connectedPeerList, shortAddress } from '../views/statusModel'

/** The button of Copy My Address's relayed-address notification that copies the direct address instead. */
const COPY_DIRECT = 'Copy Direct Address'

/** How long Connect to Peer waits for the connection (and the peer's name) before it stops watching (ms). */
const CONNECT_WATCH_MS = 60_000
/** How long it waits for the connected peer's announcement, which names it, once connected (ms). */
const NAME_WAIT_MS = 10_000

const CAPABILITY_HELP: Record<Capability, string> = {
  can_write_text: 'write text: plans, summaries, drafts',
  can_query_api: 'look things up through APIs',
  can_run_code: 'write and run code'
}

export class PeerCommands extends CommandFeature {
  constructor (d: CommandDeps) {
    super(d)
    this.register({
      [Commands.startPeer]: () => this.startPeer(),
      [Commands.stopPeer]: () => this.stopPeer(),
      [Commands.restartPeer]: () => this.restartPeer(),
      [Commands.contributeExecutor]: (caps?: Capability[]) => this.contributeExecutor(caps),
      [Commands.stopContributing]: () => this.stopContributing(),
      [Commands.startLocalSwarm]: (size?: Partial<LocalSwarmSize>) => this.startLocalSwarm(size),
      [Commands.stopLocalSwarm]: () => this.stopLocalSwarm(),
      [Commands.copyMyAddress]: () => this.copyMyAddress(),
      [Commands.connectToPeer]: (address?: string) => this.connectToPeer(address)
    })
  }

  /** Starts the main peer; resolves with its ready info. */
  async startPeer (): Promise<ReadyInfo> {
    return vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Goal Swarm: starting peer' }, () => this.d.peers.startMain())
  }

  /** Stops this editor's main peer and every peer it started; resolves when all are gone. */
  async stopPeer (): Promise<number[]> {
    const pids = this.d.peers.livePids()
    await this.d.peers.stopAll()
    await recordStarted(this.d.state, { localSwarm: undefined, contributor: undefined })
    this.log.info(`stopped peers (pids ${pids.join(', ') || 'none'})`)
    return pids
  }

  async restartPeer (): Promise<ReadyInfo> {
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Goal Swarm: restarting peers' }, () => this.d.peers.restartAll())
    return this.d.peers.main.whenReady()
  }

  /**
   * Starts an executor peer from this editor with the chosen capabilities (quick pick,
   * preselected from goalSwarm.capabilities). @returns its ready info, or undefined when cancelled
   */
  async contributeExecutor (capabilities?: Capability[]): Promise<ReadyInfo | undefined> {
    let caps = capabilities
    if (caps === undefined) {
      const preset = new Set(this.d.settings.current().capabilities)
      const picked = await vscode.window.showQuickPick(
        CAPABILITIES.map((c) => ({ label: c, description: CAPABILITY_HELP[c], picked: preset.has(c), capability: c })),
        { canPickMany: true, title: 'Contribute Executor', placeHolder: 'Capabilities this editor offers to the swarm (its LLM runs the claimed prompts)' })
      if (picked === undefined || picked.length === 0) return undefined
      caps = picked.map((p) => p.capability)
    }
    const info = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Goal Swarm: starting executor' }, () => this.d.peers.contribute(caps))
    await recordStarted(this.d.state, { contributor: caps })
    const notOffered = this.d.peers.contributorNotOffered
    if (notOffered === null) void vscode.window.showInformationMessage(`Goal Swarm: this editor now executes prompts needing ${caps.join(', ')}.`)
    else {
      // The executor drops can_run_code alone, without a sandbox (executorOffer), and said so in its `ready`.
      const offered = caps.filter((c) => c !== 'can_run_code')
      void vscode.window.showWarningMessage(`Goal Swarm: ${offered.length === 0 ? 'this editor executes no prompts' : `this editor now executes prompts needing ${offered.join(', ')}`}; ${notOffered}.`)
    }
    return info
  }

  /**
   * Stops the contributed executor and says so, with how many prompts it ran in the plans this
   * editor holds. @returns that count (null when none ran or its PeerId was never known)
   */
  async stopContributing (): Promise<number | null> {
    const peer = this.d.peers.contributor
    const id = peer?.ready?.peerId
    await this.d.peers.stopContributing()
    await recordStarted(this.d.state, { contributor: undefined })
    const ran = id === undefined ? null : this.promptsRunBy(id)
    void vscode.window.showInformationMessage(stoppedContributingMessage(peer !== undefined, ran))
    return ran
  }

  /** Prompts and final answers `peerId` executed (done or failed) in the plans this editor holds. */
  private promptsRunBy (peerId: string): number {
    let n = 0
    for (const r of this.d.model.roots()) {
      const tasks = [...leavesOf(r), ...walkSyntheses(r)]
      n += tasks.filter((t) => t.executor === peerId).length
    }
    return n
  }

  /**
   * Copies the multiaddr another editor dials to reach this one (with `/p2p/<PeerId>`), starting
   * the peer first if needed. While the main peer holds a relay slot on an anchor
   * (goalSwarm.anchors) that is its relayed address, which editors on other networks can
   * reach; the notification offers the direct one too. @returns the address copied
   */
  async copyMyAddress (): Promise<string> {
    const ready = await this.startPeer()
    const shared = shareableAddress(ready.listen, ready.peerId)
    const relayed = relayedAddresses(this.d.peers.main.status?.relay_addrs ?? ready.listen, ready.peerId)[0]
    if (relayed !== undefined) {
      await vscode.env.clipboard.writeText(relayed.address)
      this.log.info(`copied this editor's relayed address ${relayed.address}`)
      const direct = shared === undefined ? '' : ` For an editor ${shared.loopbackOnly ? 'on this machine' : 'on your network'}, "Copy Direct Address" copies ${shared.address}.`
      const buttons = shared === undefined ? [] : [COPY_DIRECT]
      void vscode.window.showInformationMessage(`Goal Swarm: copied the relayed address ${relayed.address}: it goes through the anchor ${shortAddress(relayed.address)}, so editors on other networks can reach it. Paste it into "Goal Swarm: Connect to Peer..." in the other editor.${direct}`, ...buttons).then(async (a) => {
        if (a === COPY_DIRECT && shared !== undefined) await this.copyDirect(shared)
      })
      return relayed.address
    }
    if (shared === undefined) throw new Error('the peer reports no TCP listen address')
    return await this.copyDirect(shared)
  }

  /** Copies the direct address, saying where it is reachable. @returns the address */
  private async copyDirect (shared: { address: string, loopbackOnly: boolean }): Promise<string> {
    await vscode.env.clipboard.writeText(shared.address)
    this.log.info(`copied this editor's address ${shared.address}`)
    const scope = shared.loopbackOnly
      ? ` It is reachable from this machine only; set ${Keys.listenHost} to 0.0.0.0 for editors on other machines.`
      : ''
    void vscode.window.showInformationMessage(`Goal Swarm: copied ${shared.address}. Paste it into "Goal Swarm: Connect to Peer..." in the other editor.${scope}`)
    return shared.address
  }

  /**
   * Adds a peer's multiaddr (pasted, validated) to the user's goalSwarm.bootstrapPeers and
   * restarts the peers so they dial it. @returns the address added, or undefined when cancelled
   * @throws Error naming what is wrong with an invalid address
   */
  async connectToPeer (address?: string): Promise<string | undefined> {
    const own = this.d.peers.main.ready?.peerId
    let text = address?.trim()
    if (text === undefined) {
      text = (await vscode.window.showInputBox({
        title: 'Goal Swarm: Connect to Peer',
        prompt: 'Paste the address the other editor copied with "Goal Swarm: Copy My Address" (or the one a goal-swarm-peer prints)',
        placeHolder: '/ip4/192.168.1.20/tcp/4001/p2p/12D3KooW…',
        ignoreFocusOut: true,
        validateInput: (v) => peerAddressProblem(v, own)
      }))?.trim()
      if (text === undefined) return undefined
    }
    const problem = peerAddressProblem(text, own)
    if (problem !== undefined) throw new Error(`cannot connect to "${text}": ${problem}`)
    const config = vscode.workspace.getConfiguration()
    const current = config.inspect<string[]>(Keys.bootstrapPeers)?.globalValue ?? []
    await this.d.peers.withPlannedRestart(async () => {
      if (!current.includes(text)) await config.update(Keys.bootstrapPeers, [...current, text], vscode.ConfigurationTarget.Global)
      this.log.info(`added bootstrap peer ${text}; restarting the peers`)
      await this.restartPeer()
    })
    void vscode.window.showInformationMessage(`Goal Swarm: connecting to ${text}. An unreachable address is named in the status bar and above the plan.`)
    this.confirmConnected(text)
    return text
  }

  /**
   * Shows "connected to <name>" once the main peer is connected to the peer `address` ends in,
   * named by its announcement (its PeerId suffix when none arrives within NAME_WAIT_MS). Stops
   * watching after CONNECT_WATCH_MS: an address still unreachable then is named above the plan.
   */
  private confirmConnected (address: string): void {
    const target = /\/p2p\/(\w+)$/.exec(address)?.[1]
    if (target === undefined) return
    let connectedAt: number | undefined
    const check = (): void => {
      const ids = this.d.peers.main.status?.connected_peer_ids ?? []
      if (!ids.includes(target)) return
      connectedAt ??= Date.now()
      const peer = connectedPeerList([target], this.d.model.livePeers(), new Map())[0]
      if (peer === undefined || (peer.role === null && Date.now() - connectedAt < NAME_WAIT_MS)) return
      done()
      this.log.info(`connected to ${connectedPeerLabel(peer)} at ${address}`)
      void vscode.window.showInformationMessage(`Goal Swarm: connected to ${connectedPeerLabel(peer)}. Its plans and yours now show in both editors, and the executors of both take their prompts.`)
    }
    const sub = this.d.peers.onDidChange(check)
    const timer = setTimeout(() => { done() }, CONNECT_WATCH_MS)
    const done = (): void => { clearTimeout(timer); sub.dispose() }
    this._register({ dispose: done })
    check()
  }

  /**
   * Starts a local swarm (2 decomposers, 2 scorers, 2 executors by default) on 127.0.0.1 with
   * the configured LLM provider. @returns the members' ready infos
   */
  async startLocalSwarm (size?: Partial<LocalSwarmSize>): Promise<ReadyInfo[]> {
    const full = { ...DEFAULT_LOCAL_SWARM, ...size }
    const n = full.decomposers + full.scorers + full.executors
    const provider = await this.providerLabel()
    const infos = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Goal Swarm: starting a local swarm of ${n} peers (${provider})` },
      () => this.d.peers.startLocalSwarm(full))
    await recordStarted(this.d.state, { localSwarm: full })
    return infos
  }

  async stopLocalSwarm (): Promise<void> {
    await this.d.peers.stopLocalSwarm()
    await recordStarted(this.d.state, { localSwarm: undefined })
  }

  /** The LLM provider the peers will use, as the user reads it ("offline demo", "anthropic"). */
  async providerLabel (): Promise<string> {
    const s = this.d.settings.current()
    // A missing key is reported when the peers start; the label names the provider chosen.
    const p = await this.d.peers.provider(s, s.role === 'observer' ? 'executor' : s.role).catch(() => effectiveProvider(s.llmProvider, false))
    return p === 'offline-demo' ? 'offline demo' : p === 'vscode-lm' ? 'a VS Code chat model' : p
  }
}
