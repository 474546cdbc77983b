/**
 * The plans the chat doors (language model tools, @swarm) talk about, read from the extension's
 * plan model: every root this editor holds, the ones its own peer submitted (the only ones it
 * may cancel, DESIGN R13), lookups by goal id or goal text, and a plan's final answer text.
 */
import type { GoalView } from '../../plan/read/tree'
import { nothingToCancelMessage } from '../../views/messages'
import { answerLeaf, type PlanModel } from '../../views/planModel'
import type { ResultDocuments } from '../../views/resultDocuments'
import type { PeerManager } from '../peers'
import { GOAL_ID_RE } from '../goalInput'

export class ChatPlans {
  constructor (
    private readonly model: PlanModel,
    private readonly peers: Pick<PeerManager, 'main'>,
    private readonly results: Pick<ResultDocuments, 'fullOutput'>
  ) {}

  /** Root goals this editor holds, newest first. */
  newestFirst (): GoalView[] { return [...this.model.roots()].reverse() }

  /** The root with this goal id, if this editor holds it. */
  byId (goalId: string): GoalView | undefined { return this.model.roots().find((r) => r.id === goalId) }

  /** true when this editor's own peer submitted the goal (its origin). */
  submittedHere (root: GoalView): boolean {
    const me = this.peers.main.ready?.peerId
    return me !== undefined && this.model.state.goal(root.id)?.origin_peer === me
  }

  /**
   * A plan named in chat: by its goal id, else the newest whose goal text contains `query`
   * (case-insensitive), among `roots` (default: every plan, newest first).
   */
  find (query: string, roots: readonly GoalView[] = this.newestFirst()): GoalView | undefined {
    const q = query.trim()
    if (GOAL_ID_RE.test(q)) return roots.find((r) => r.id === q)
    const lower = q.toLowerCase()
    return roots.find((r) => r.text.toLowerCase().includes(lower))
  }

  /**
   * The plan /cancel means without a name: the newest plan this editor submitted that a cancel
   * would stop (Cancel Plan's own test, views/messages.ts nothingToCancelMessage), else
   * the newest it submitted (whose message then says it is over), else undefined.
   */
  newestOwn (): GoalView | undefined {
    const own = this.newestFirst().filter((r) => this.submittedHere(r))
    return own.find((r) => nothingToCancelMessage(r) === null) ?? own[0]
  }

  /** The final answer's full text once the root's synthesis is done, else null. @throws Error when its blob cannot be fetched */
  async finalAnswer (root: GoalView): Promise<string | null> {
    const s = root.synthesis
    if (s === null || s.status !== 'done') return null
    return await this.results.fullOutput(answerLeaf(s))
  }
}
