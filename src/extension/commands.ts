/**
 * Every palette command of the extension (category "Goal Swarm"), one feature module each:
 * peers (peerCommands), Submit Goal (goalCommands), results (resultCommands), whole plans
 * (planCommands), steering a plan (reviewCommands), API keys (keyCommands). Registration and error reporting are shared
 * (commandRegistry).
 */
import { Commands } from './commandIds'
import { registerCommands, type CommandDeps } from './commandRegistry'
import { Disposable } from '../common/disposable'
import { GoalCommands } from './goalCommands'
import { KeyCommands } from './keyCommands'
import { PeerCommands } from './peerCommands'
import { PlanCommands } from './planCommands'
import { ResultCommands } from './resultCommands'
import { ReviewCommands } from './reviewCommands'

/** Registers every command; disposing it unregisters them all. */
export class ExtensionCommands extends Disposable {
  /** Submit Goal, also the chat doors' way in. */
  readonly goals: GoalCommands
  /** Whole-plan commands (Cancel Plan, also @swarm /cancel's). */
  readonly plans: PlanCommands

  constructor (d: CommandDeps) {
    super()
    const peers = this._register(new PeerCommands(d))
    this.goals = this._register(new GoalCommands(d, peers))
    this._register(new ResultCommands(d))
    this.plans = this._register(new PlanCommands(d))
    this._register(new ReviewCommands(d))
    this._register(new KeyCommands(d))
    for (const r of registerCommands(d.log, { [Commands.showLog]: () => d.log.show() })) this._register(r)
  }
}
