/**
 * Review at the terminal (DESIGN R14 "Review", CLI): the peer that submitted a goal with
 * `--review-depth` shows each proposal waiting for the person's review, read from the goals'
 * wait `review` (rules/waits.ts goalWait, via the tree's GoalView.wait, never recomputed). On a
 * terminal (stdin and stdout both TTYs) it asks about each one in turn: approve, reject (with a
 * note), edit (the subgoals in $VISUAL / $EDITOR, published as the origin's own split once the
 * split check passes, ownSplit.ts) or skip. Elsewhere it prints each proposal once with the
 * `--approve` / `--reject` commands to run and never waits for input.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface, type Interface } from 'node:readline/promises'
import type { Readable, Writable } from 'node:stream'
import { buildTree, type GoalView } from '../plan/read/tree'
import { announcedNames } from '../plan/read/peerNames'
import { peerLabel } from '../plan/read/report'
import { evaluate } from '../plan/rules/evaluator'
import { steerProblem } from '../plan/rules/steerProblem'
import type { ReviewProposal } from '../plan/rules/waits'
import type { Disposable } from './bus'
import type { PeerRuntime } from './net/runtime'
import { publishOwnSplit, SplitRefused } from './ownSplit'

/** A goal of the plan waiting for review and the proposals it waits on (goalWait 'review'). */
export interface WaitingReview { goal: GoalView, proposals: ReviewProposal[] }

/** The goals of `root`'s tree waiting for review, in tree order, with their proposals. */
export function waitingReviews (root: GoalView): WaitingReview[] {
  const out: WaitingReview[] = []
  const walk = (g: GoalView): void => {
    if (g.wait?.on === 'review' && g.wait.proposals.length > 0) out.push({ goal: g, proposals: g.wait.proposals })
    for (const c of g.children) if (c.kind === 'goal') walk(c)
  }
  walk(root)
  return out
}

/** "mean 0.80 from 2 votes", "no votes yet". */
function scoreWords (p: ReviewProposal): string {
  return p.mean === null ? 'no votes yet' : `mean ${p.mean.toFixed(2)} from ${p.voters} vote${p.voters === 1 ? '' : 's'}`
}

/**
 * A proposal as the terminal shows it: the goal, then the id, proposer and score, then the
 * subgoals numbered and the scorers' notes. `label` names a peer (announced name, else PeerId suffix).
 */
export function proposalLines (goal: GoalView, p: ReviewProposal, label: (peer: string) => string): string[] {
  return [
    `Split of '${goal.text}' waiting for your review:`,
    `  proposal ${p.proposal_id} by ${label(p.proposer_peer)}, ${scoreWords(p)}`,
    ...p.subgoals.map((s, i) => `    ${i + 1}. ${s}`),
    ...p.notes.map((n) => `  scorer's note: ${n}`)
  ]
}

/**
 * What a peer not on a terminal prints for a proposal waiting for review: the proposal and the
 * commands that approve or reject it, run with the same identity (`--name`, `--data-dir`) as
 * the submitting peer.
 */
export function reviewCommandLines (goal: GoalView, p: ReviewProposal, label: (peer: string) => string): string[] {
  return [
    ...proposalLines(goal, p, label),
    `  approve: goal-swarm-peer --approve ${p.proposal_id}`,
    `  reject:  goal-swarm-peer --reject ${p.proposal_id} --note "what to do instead"`,
    '  (run with this peer\'s --name and --data-dir: only the plan\'s origin steers it)'
  ]
}

/**
 * The subgoals of an edited split file: the text of every line starting with `- `, in order;
 * other lines (the heading, blank lines) are ignored.
 */
export function parseSplitFile (text: string): string[] {
  return text.split(/\r?\n/).flatMap((line) => {
    const m = /^\s*-\s+(.*)$/.exec(line)
    return m === null ? [] : [(m[1] ?? '').trim()]
  })
}

/** The file a person edits: a comment line naming the goal, then one `- ` line per subgoal. */
export function splitFileText (goalText: string, subgoals: readonly string[]): string {
  return [`# Subgoals of '${goalText.replace(/\s+/g, ' ')}', one per line starting with "- ". Save and close to publish it as your own split.`, ...subgoals.map((s) => `- ${s}`), ''].join('\n')
}

/**
 * Opens `text` in the person's editor ($VISUAL, else $EDITOR, else vi) on a temp file under
 * `dir` (default TMPDIR) and returns the saved text; the temp file is removed.
 * @throws Error when the editor cannot start or exits with a non-zero code
 */
export async function editInEditor (text: string, dir = tmpdir()): Promise<string> {
  const folder = await mkdtemp(path.join(dir, 'goal-swarm-split-'))
  const file = path.join(folder, 'split.md')
  try {
    await writeFile(file, text, { mode: 0o600 })
    // An empty variable counts as unset, as shells and other programs read them.
    const editor = [process.env.VISUAL, process.env.EDITOR].find((v) => v !== undefined && v.trim() !== '') ?? 'vi'
    // Through the shell: $EDITOR may carry arguments ("code --wait").
    await new Promise<void>((resolve, reject) => {
      const child = spawn(`${editor} "$GOAL_SWARM_SPLIT_FILE"`, { shell: true, stdio: 'inherit', env: { ...process.env, GOAL_SWARM_SPLIT_FILE: file } })
      child.on('error', reject)
      child.on('exit', (code) => { if (code === 0) resolve(); else reject(new Error(`the editor (${editor}) exited with code ${code ?? 'null'}`)) })
    })
    return await readFile(file, 'utf8')
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}

/** What the prompt does with the person's answers; each resolves null when done, else the sentence saying why it was refused. */
export interface ReviewActions {
  /** Publishes the origin's approve or reject of `proposalId` (steerProblem first). */
  steer: (action: 'approve' | 'reject', proposalId: string, note: string) => Promise<string | null>
  /** Publishes `subgoals` as the origin's own split of goal `goalId` (ownSplitProblem / splitProblem first). */
  propose: (goalId: string, subgoals: string[]) => Promise<string | null>
  /** Lets the person edit `text` (editInEditor) and returns the saved text. */
  edit: (text: string) => Promise<string>
  /** Names a peer (announced name, else PeerId suffix). */
  label: (peer: string) => string
}

/** How the person answered about one proposal. */
export type ReviewAnswer = 'approved' | 'rejected' | 'proposed' | 'skipped'

/**
 * Asks about one proposal on `rl` until the person's answer is published or skipped: a refusal
 * (a steer that would change nothing, an own split breaking the split rule) is printed and the
 * question asked again.
 */
export async function askAboutProposal (rl: Interface, out: Writable, review: WaitingReview, p: ReviewProposal, actions: ReviewActions): Promise<ReviewAnswer> {
  const say = (line: string): void => { out.write(`${line}\n`) }
  for (const line of proposalLines(review.goal, p, actions.label)) say(line)
  for (;;) {
    const answer = (await rl.question('[a]pprove, [r]eject, [e]dit, [s]kip? ')).trim().toLowerCase()
    if (answer === 'a' || answer === 'approve') {
      const problem = await actions.steer('approve', p.proposal_id, '')
      if (problem === null) { say(`approved ${p.proposal_id}`); return 'approved' }
      say(`not approved: ${problem}`)
    } else if (answer === 'r' || answer === 'reject') {
      const note = (await rl.question('note for the decomposers (what to do instead): ')).trim()
      const problem = await actions.steer('reject', p.proposal_id, note)
      if (problem === null) { say(`rejected ${p.proposal_id}`); return 'rejected' }
      say(`not rejected: ${problem}`)
    } else if (answer === 'e' || answer === 'edit') {
      let text = splitFileText(review.goal.text, p.subgoals)
      for (;;) {
        rl.pause()
        try {
          text = await actions.edit(text)
        } catch (err) {
          rl.resume()
          say(`could not edit the split: ${err instanceof Error ? err.message : String(err)}`)
          break
        }
        rl.resume()
        const problem = await actions.propose(review.goal.id, parseSplitFile(text))
        if (problem === null) { say(`published your own split of '${review.goal.text}'`); return 'proposed' }
        say(`your split was not published: ${problem}`)
        const again = (await rl.question('edit it again? [y/n] ')).trim().toLowerCase()
        if (again !== 'y' && again !== 'yes') break
      }
    } else if (answer === 's' || answer === 'skip') {
      say(`skipped ${p.proposal_id}`)
      return 'skipped'
    } else {
      say('answer a, r, e or s')
    }
  }
}

/** What the review watch reads and where it writes. */
export interface ReviewTerminalOptions {
  /** The waiting reviews of the submitted plan now (waitingReviews of its root), [] while there is none. */
  current: () => WaitingReview[]
  actions: ReviewActions
  input: Readable
  output: Writable
  /** Ask interactively (stdin and stdout are TTYs); false: print each proposal once with its commands. */
  interactive: boolean
  /** Called with true while a question waits for the person, so other output can hold back. */
  onAsking?: (asking: boolean) => void
}

/** A running review watch: `check` after the plan changed; dispose closes the prompt. */
export interface ReviewTerminal { check: () => void, dispose: () => void, idle: () => Promise<void> }

/**
 * Starts showing the proposals waiting for review. Each proposal is shown once: asked about
 * (interactive) or printed with its commands; a proposal the person skipped is not asked again.
 */
export function startReviewTerminal (o: ReviewTerminalOptions): ReviewTerminal {
  const seen = new Set<string>()
  let rl: Interface | null = null
  let running: Promise<void> = Promise.resolve()
  let busy = false
  let again = false
  let disposed = false
  const next = (): { review: WaitingReview, p: ReviewProposal } | null => {
    for (const review of o.current()) for (const p of review.proposals) if (!seen.has(p.proposal_id)) return { review, p }
    return null
  }
  const loop = async (): Promise<void> => {
    for (;;) {
      const item = next()
      if (item === null || disposed) return
      seen.add(item.p.proposal_id)
      if (!o.interactive) {
        o.output.write(`${reviewCommandLines(item.review.goal, item.p, o.actions.label).join('\n')}\n`)
        continue
      }
      if (rl === null) {
        rl = createInterface({ input: o.input, output: o.output, terminal: (o.output as { isTTY?: boolean }).isTTY === true })
        // On a terminal readline takes Ctrl-C as a key: it must still stop the peer as it does elsewhere.
        rl.on('SIGINT', () => { process.kill(process.pid, 'SIGINT') })
      }
      o.onAsking?.(true)
      try {
        await askAboutProposal(rl, o.output, item.review, item.p, o.actions)
      } catch (err) {
        // The prompt closed (Ctrl-D, dispose): nothing more is asked.
        if (disposed || (err as { code?: string }).code === 'ABORT_ERR' || (err as Error).message?.includes('closed')) { disposed = true; return }
        throw err
      } finally {
        o.onAsking?.(false)
      }
    }
  }
  const check = (): void => {
    if (disposed) return
    if (busy) { again = true; return }
    busy = true
    running = loop().finally(() => {
      busy = false
      if (again && !disposed) { again = false; check() }
    })
  }
  return {
    check,
    idle: async () => { await running },
    dispose: () => {
      disposed = true
      rl?.close()
      rl = null
    }
  }
}

/** Rebuild the tree at least this often while reviewing (ms): votes arrive as messages, but a restart of the prompt needs none. */
const REVIEW_TICK_MS = 2000
/** Quiet time after a message before the waiting proposals are read again (ms). */
const REVIEW_DEBOUNCE_MS = 300

/** What the submitting peer needs of the runtime to show and answer reviews. */
export type ReviewingPeer = Pick<PeerRuntime, 'peerId' | 'state' | 'rules' | 'now' | 'bus' | 'steer'>

/**
 * The CLI's review of plan `goalId` (submitted with --review-depth): watches the plan and shows
 * each proposal waiting for review on `output` (interactive on a terminal, else the commands to
 * run). Steers go through steerProblem and the runtime; an own split through publishOwnSplit.
 */
export function startCliReview (rt: ReviewingPeer, goalId: string, o: { interactive: boolean, input: Readable, output: Writable, onAsking?: (asking: boolean) => void }): Disposable {
  const label = (peer: string): string => peerLabel(peer, announcedNames(rt.state.capabilities()))
  const actions: ReviewActions = {
    label,
    steer: async (action, target, note) => {
      const problem = steerProblem(evaluate(rt.state, rt.now(), rt.rules), rt.peerId, { action, target, note, rootId: goalId })
      if (problem !== null) return problem
      await rt.steer(goalId, action, target, note)
      return null
    },
    propose: async (id, subgoals) => {
      try {
        await publishOwnSplit(rt, id, { subgoals })
        return null
      } catch (err) {
        if (err instanceof SplitRefused) return err.message
        throw err
      }
    },
    edit: async (text) => await editInEditor(text)
  }
  const current = (): WaitingReview[] => {
    const root = buildTree(rt.state, { nowUs: rt.now(), rules: rt.rules }).find((r) => r.id === goalId)
    return root === undefined ? [] : waitingReviews(root)
  }
  const term = startReviewTerminal({ current, actions, input: o.input, output: o.output, interactive: o.interactive, ...(o.onAsking === undefined ? {} : { onAsking: o.onAsking }) })
  let pending: NodeJS.Timeout | null = null
  const sub = rt.bus.onMessage(() => { pending ??= setTimeout(() => { pending = null; term.check() }, REVIEW_DEBOUNCE_MS) })
  const tick = setInterval(() => { term.check() }, REVIEW_TICK_MS)
  tick.unref()
  term.check()
  return {
    dispose: () => {
      sub.dispose()
      clearInterval(tick)
      if (pending !== null) clearTimeout(pending)
      term.dispose()
    }
  }
}
