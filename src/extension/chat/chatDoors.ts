/**
 * The editor's chat doors (DESIGN "Front doors"): the language model tools, the @swarm chat
 * participant and the MCP server definition, with the "Show in Plan View" command their answers
 * link to. All go through the extension's own Submit Goal, Cancel Plan and plan model.
 */
import * as vscode from 'vscode'
import { Disposable } from '../../common/disposable'
import type { PlanModel } from '../../views/planModel'
import type { PlanView } from '../../views/planView'
import type { ResultDocuments } from '../../views/resultDocuments'
import { Commands } from '../commandIds'
import { registerCommands } from '../commandRegistry'
import type { SettingsService } from '../config'
import type { GoalCommands } from '../goalCommands'
import type { Log } from '../log'
import type { VscodeModels } from '../llm/vscodeModels'
import type { PeerManager } from '../peers'
import type { PlanCommands } from '../planCommands'
import { ChatPlans } from './chatPlans'
import { GoalTools } from './goalTools'
import { McpDefinitions } from './mcpDefinition'
import { SwarmParticipant } from './swarmParticipant'

export interface ChatDoorDeps {
  log: Log
  /** VS Code's chat models: whether a goal run on one (provider "vscode") can be. */
  models?: Pick<VscodeModels, 'available'>
  goals: GoalCommands
  plans: PlanCommands
  model: PlanModel
  peers: PeerManager
  results: ResultDocuments
  view: PlanView
  settings: SettingsService
  extensionUri: vscode.Uri
  /** The extension's version (package.json). */
  version: string
}

export class ChatDoors extends Disposable {
  readonly tools: GoalTools
  readonly participant: SwarmParticipant
  readonly mcp: McpDefinitions

  constructor (d: ChatDoorDeps) {
    super()
    const chatPlans = new ChatPlans(d.model, d.peers, d.results)
    this.tools = this._register(new GoalTools({ goals: d.goals, plans: chatPlans, settings: d.settings }))
    const lacksChatModel = async (): Promise<boolean> => d.settings.current().llmProvider === 'vscode' && d.models !== undefined && !(await d.models.available())
    this.participant = this._register(new SwarmParticipant({ goals: d.goals, plans: d.plans, chatPlans, model: d.model, log: d.log.for('chat'), lacksChatModel, peerLabel: (p) => d.view.provider.peerLabel(p) }, vscode.Uri.joinPath(d.extensionUri, 'media', 'goal-swarm.png')))
    this.mcp = this._register(new McpDefinitions(d.peers, d.settings, vscode.Uri.joinPath(d.extensionUri, 'dist', 'peer.js').fsPath, d.version))
    for (const r of registerCommands(d.log, { [Commands.revealPlan]: (goalId: string) => d.view.reveal(goalId) })) this._register(r)
  }
}
