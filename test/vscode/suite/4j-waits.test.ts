import '../../../src/extension/zodSetup'
import assert from 'node:assert/strict'
import * as vscode from 'vscode'
import { PROGRAM_SCHEMA_NAME } from '../../../src/peer/roles/prompts'
import { clockTime } from '../../../src/plan/read/waitWords'
import { statusWord } from '../../../src/plan/read/statusWords'
import { planProgress, type GoalView, type SynthesisView, type TreeNode } from '../../../src/plan/read/tree'
import { swarmRules, swarmRulesOfSettings } from '../../../src/plan/rules/swarmRules'
import { escapeMarkdown } from '../../../src/views/format'
import { demoResponder, LlmStandin, scoreReply, type StandinReply, type StandinRequest } from '../../support/llm-standin'
import { alive, answeringDialogs, api, applySettings, rootById, TEST_SETTINGS, until, waitForPlan, walk, workersLive } from './helpers'

type Api = Awaited<ReturnType<typeof api>>

/** A request to carry out a prompt or a synthesis (free text, or a program for can_run_code). */
function isExecution (r: StandinRequest): boolean {
  return r.purpose === 'execute' || r.purpose === 'synthesize' || r.schemaName === PROGRAM_SCHEMA_NAME
}

/** A row of the Plan view as VS Code draws it: its description and tooltip Markdown. */
function row (a: Api, id: string): { description: string, tooltip: string } {
  const item = a.tree.getTreeItem(a.tree.element(id))
  return { description: String(item.description ?? ''), tooltip: (item.tooltip as vscode.MarkdownString | undefined)?.value ?? '' }
}

/**
 * Resolves with the first value `check` returns for row `id` (its description), read now and
 * after every redraw of the view (a wait that counts time is redrawn each second).
 * @throws what `check` throws, at once; after timeoutMs, naming `what` and the row's last description
 */
function whenRow<T> (a: Api, id: string, check: (description: string) => T | undefined, timeoutMs: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const end = (): void => { clearTimeout(timer); sub.dispose() }
    const look = (): void => {
      if (a.model.find(id) === undefined) return
      let v: T | undefined
      try {
        v = check(row(a, id).description)
      } catch (err) {
        end()
        reject(err as Error)
        return
      }
      if (v === undefined) return
      end()
      resolve(v)
    }
    const sub = a.tree.onDidRefresh(look)
    const timer = setTimeout(() => {
      sub.dispose()
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the row reads "${a.model.find(id) === undefined ? '(no row)' : row(a, id).description}"`))
    }, timeoutMs)
    look()
  })
}

/** Every node a root's rows show: its goals and prompts, and each goal's synthesis (the root's is the Final answer). */
function nodesOf (root: GoalView): Array<TreeNode | SynthesisView> {
  return walk(root).flatMap((n): Array<TreeNode | SynthesisView> => n.kind === 'goal' && n.synthesis !== null ? [n, n.synthesis] : [n])
}

/** A description that reads failed or blocked: its status ("failed", "blocked: …") or a goal's count of them ("1 failed"). */
function readsFailed (description: string): boolean {
  const [status = '', ...rest] = description.split(' · ')
  const bad = [statusWord('failed'), statusWord('blocked')]
  return bad.some((w) => status === w || status.startsWith(`${w}:`)) || rest.some((p) => bad.some((w) => new RegExp(`^\\d+ ${w}$`).test(p)))
}

/**
 * Watches the rows of plan `rootId` at every model change and every redraw of the view, and
 * records each row or node that read failed or blocked. stop() ends the watch.
 */
function watchForFailures (a: Api, rootId: string): { stop: () => { looks: number, bad: string[] } } {
  const bad: string[] = []
  let looks = 0
  const look = (): void => {
    const root = rootById(a, rootId)
    if (root === undefined) return
    looks++
    for (const n of nodesOf(root)) {
      if (n.status === 'failed' || n.status === 'blocked') bad.push(`${n.kind} ${n.id} "${n.text.slice(0, 40)}" has status ${n.status}`)
      if (a.model.find(n.id) === undefined) continue
      const d = row(a, n.id).description
      if (readsFailed(d)) bad.push(`the row of ${n.kind} ${n.id} "${n.text.slice(0, 40)}" reads "${d}"`)
    }
  }
  const subs = [a.tree.onDidRefresh(look), a.model.onDidChange(look)]
  look()
  return { stop: () => { subs.forEach((s) => s.dispose()); look(); return { looks, bad: [...new Set(bad)] } } }
}

suite('Goal Swarm: a goal says what it waits on, and waits instead of failing (DESIGN "No silent wait", R8)', () => {
  suiteSetup(async () => {
    const a = await api()
    await applySettings(TEST_SETTINGS)
    await until(() => a.settings.current().llmProvider === 'offline-demo', 10_000, 'the test settings read')
  })

  suiteTeardown(async () => {
    const a = await api()
    // The Plan view judges by the settings' rules again (the first test shortens its acceptance timeout).
    a.tree.rules = swarmRulesOfSettings(a.settings.current())
  })

  test('with nobody online to split it, the goal\'s row says it waits for a decomposer, and the goal never turns failed, also once the acceptance timeout has passed', async function () {
    this.timeout(240_000)
    const a = await api()
    await a.peers.stopContributing()
    await a.peers.stopLocalSwarm()
    await until(() => !a.model.livePeers().some((p) => p.role === 'decomposer' || p.role === 'scorer'), 90_000, 'the decomposers and scorers of earlier files to leave the roster (3 heartbeats)')
    // The peers' acceptance timeout is 45 s, and the editor judges a goal by the same rules
    // (before, a goal nobody split within it turned failed). A short one in the view's rules
    // shows within seconds that it no longer decides anything for such a goal.
    const timeoutMs = 3000
    a.tree.rules = swarmRules({ ...a.tree.rules.settings, acceptance: { ...a.tree.rules.acceptance, timeoutMs } })
    const goal = 'Plan a picnic nobody splits'
    const { value: goalId, dialogs } = await answeringDialogs((d) => d.items.includes('Submit Anyway') ? 'Submit Anyway' : undefined,
      () => Promise.resolve(vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: goal, progress: false })))
    assert.deepEqual(dialogs.map((d) => d.message), ['No decomposer and scorers are online in swarm "default", so nobody would plan this goal yet. Start a local swarm on this machine?'])
    assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
    await waitForPlan(a, () => rootById(a, goalId) !== undefined, 30_000, 'the goal in the plan')
    const watch = watchForFailures(a, goalId)
    let watched: ReturnType<typeof watch.stop> | undefined
    try {
      const wording = new RegExp(`^${statusWord('pending_decomposition')} · waiting for a decomposer: none is online(?: \\((\\d+) s\\))? · \\d\\d:\\d\\d$`)
      const first = row(a, goalId).description
      assert.match(first, wording)
      // It counts how long it has waited, redrawn each second, until well past the timeout.
      const waited = await whenRow(a, goalId, (d) => {
        if (readsFailed(d)) throw new Error(`the goal nobody can split reads "${d}"`)
        const s = wording.exec(d)?.[1]
        return s !== undefined && Number(s) >= timeoutMs / 1000 + 3 ? d : undefined
      }, 60_000, `the row to count more than ${timeoutMs / 1000 + 3} s`)
      const root = rootById(a, goalId)
      assert.equal(root?.status, 'pending_decomposition')
      assert.equal(root?.wait?.on, 'decomposer')
      const item = a.tree.getTreeItem(a.tree.element(goalId))
      assert.equal((item.iconPath as vscode.ThemeIcon).id, 'loading~spin')
      assert.equal(item.contextValue, 'goal.pending_decomposition.root')
      const tip = row(a, goalId).tooltip
      assert.match(tip, /\n\$\(clock\) \*\*Waiting:\*\* waiting for a decomposer: none is online \\\(\d+ s\\\)\n/, tip)
      console.log(`a goal nobody can split reads "${waited}"`)
    } finally {
      watched = watch.stop()
      a.tree.rules = swarmRulesOfSettings(a.settings.current())
    }
    assert.ok(watched.looks >= 5, `the rows were read at ${watched.looks} redraws`)
    assert.deepEqual(watched.bad, [], 'no row of the waiting goal read failed or blocked')

    // Decomposers and scorers that come online later split it: it waited for them.
    await vscode.commands.executeCommand('goalSwarm.startLocalSwarm', { decomposers: 1, scorers: 2, executors: 0 })
    await waitForPlan(a, () => rootById(a, goalId)?.status === 'decomposed', 120_000, 'the waiting goal split once decomposers and scorers are online')
    await vscode.commands.executeCommand('goalSwarm.cancelPlan', a.tree.element(goalId), { confirm: false })
  })

  suite('with peers on the LLM stand-in', () => {
    let llm: LlmStandin
    /** How the stand-in answers now (each test sets it). */
    let answer: (req: StandinRequest) => StandinReply | Promise<StandinReply> = demoResponder

    suiteSetup(async function () {
      this.timeout(180_000)
      const a = await api()
      llm = await LlmStandin.start()
      llm.respondWith((req) => answer(req))
      await applySettings({ ...TEST_SETTINGS, 'goalSwarm.llm.provider': 'openai-compatible', 'goalSwarm.llm.baseUrl': llm.openaiBaseUrl, 'goalSwarm.llm.model': 'standin-model' })
      await until(() => a.settings.current().llmProvider === 'openai-compatible' && a.settings.current().llmBaseUrl === llm.openaiBaseUrl, 10_000, 'the LLM settings read')
      const members = await vscode.commands.executeCommand<{ peerId: string }[]>('goalSwarm.startLocalSwarm', { decomposers: 1, scorers: 2, executors: 2 })
      assert.ok(Array.isArray(members) && members.length === 5)
      await waitForPlan(a, () => members.every((m) => a.model.livePeers().some((p) => p.peer_id === m.peerId)), 60_000, 'announcements of the local swarm on the stand-in')
    })

    suiteTeardown(async function () {
      this.timeout(120_000)
      const a = await api()
      await a.peers.stopLocalSwarm()
      await applySettings({ ...TEST_SETTINGS, 'goalSwarm.llm.baseUrl': undefined, 'goalSwarm.llm.model': undefined })
      await until(() => a.settings.current().llmProvider === 'offline-demo', 10_000, 'the offline demo model set again')
      await llm.close()
    })

    test('a goal whose best split scores under the minimum counts down to the fallback in its row, and its tooltip names the instant', async function () {
      this.timeout(180_000)
      const a = await api()
      // Every vote 0.50, under the minimum score 0.60: no quorum, the fallback takes the best split.
      answer = (req) => req.purpose === 'score' ? scoreReply(req, 0.5) : demoResponder(req)
      const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: 'Plan a slow split', ifNoWorkers: 'submit', progress: false })
      assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
      try {
        const wording = new RegExp(`^${statusWord('pending_decomposition')} · best split 0\\.50 < 0\\.60: taking it in (\\d+) s · \\d\\d:\\d\\d$`)
        const first = await whenRow(a, goalId, (d) => wording.exec(d) === null ? undefined : d, 90_000, 'the row to say the best split waits for the fallback')
        const left = Number(wording.exec(first)?.[1])
        const due = a.model.rules.fallbackDueUs(a.model.state, goalId)
        assert.ok(due !== null, 'the fallback is due at an instant')
        assert.ok(left >= 1 && left <= 45, `${left} s left of the 45 s acceptance timeout`)
        const tip = row(a, goalId).tooltip
        const line = tip.split('\n').find((l) => l.startsWith('$(clock) **Waiting:** '))
        assert.match(line ?? '', new RegExp(`^\\$\\(clock\\) \\*\\*Waiting:\\*\\* ${escapeMarkdown('best split 0.50 < 0.60: taking it in ').replace(/[\\.()]/g, '\\$&')}\\d+ s \\(at ${clockTime(due)}\\)$`), tip)
        // The countdown moves: the row is redrawn with fewer seconds left.
        const later = await whenRow(a, goalId, (d) => {
          const s = wording.exec(d)?.[1]
          return s !== undefined && Number(s) < left ? d : undefined
        }, 15_000, `the countdown below ${left} s`)
        console.log(`a goal waiting for the fallback reads "${first}", then "${later}"`)
        assert.equal(rootById(a, goalId)?.status, 'pending_decomposition')
      } finally {
        answer = demoResponder
        await vscode.commands.executeCommand('goalSwarm.cancelPlan', a.tree.element(goalId), { confirm: false })
      }
    })

    test('while the editor\'s peers restart mid-plan (Restart Peer, as a window reload restarts them), no row of the plan reads failed or blocked, and the plan completes afterwards', async function () {
      this.timeout(360_000)
      const a = await api()
      // Executions wait at the stand-in until the restart is over: a prompt runs while its executor stops.
      let release!: () => void
      const released = new Promise<void>((resolve) => { release = resolve })
      answer = async (req) => {
        if (isExecution(req)) await released
        return demoResponder(req)
      }
      try {
        await until(() => workersLive(a), 60_000, 'the local swarm live')
        const goalId = await vscode.commands.executeCommand<string>('goalSwarm.submitGoal', { text: 'Plan a restart-proof tea party', ifNoWorkers: 'submit', progress: false })
        assert.match(goalId ?? '', /^[0-9a-f]{16}$/)
        await waitForPlan(a, () => rootById(a, goalId) !== undefined, 30_000, 'the goal in the plan')
        const watch = watchForFailures(a, goalId)
        let watched: ReturnType<typeof watch.stop> | undefined
        try {
          await until(() => llm.requests.some((r) => isExecution(r) && r.outcome === null), 120_000, 'an execution request held at the stand-in')
          await waitForPlan(a, () => { const r = rootById(a, goalId); return r !== undefined && nodesOf(r).some((n) => n.kind === 'leaf' && n.status === 'claimed') }, 30_000, 'a prompt shown running')
          const before = a.peers.livePids()
          const running = nodesOf(rootById(a, goalId) as GoalView).filter((n) => n.kind === 'leaf' && n.status === 'claimed').map((n) => n.id)
          await vscode.commands.executeCommand('goalSwarm.restartPeer')
          const after = a.peers.livePids()
          assert.ok(before.every((p) => !alive(p) && !after.includes(p)), `every peer replaced: ${before.join(', ')} → ${after.join(', ')}`)
          assert.equal(a.peers.localSwarm.filter((p) => p.isActive).length, 5, 'the local swarm is back')
          assert.ok(llm.requests.some((r) => isExecution(r) && r.outcome === 'aborted'), 'a call in flight was cut by the restart')
          console.log(`restarted the peers while ${running.length} prompt(s) ran; ${llm.requests.filter((r) => isExecution(r) && r.outcome === 'aborted').length} call(s) cut`)
          release()
          await waitForPlan(a, () => { const r = rootById(a, goalId); return r !== undefined && planProgress(r).complete && r.synthesis?.status === 'done' }, 240_000, 'the plan to complete after the restart')
        } finally {
          watched = watch.stop()
        }
        const root = rootById(a, goalId)
        assert.ok(root)
        const p = planProgress(root)
        assert.equal(p.done, p.leaves, 'every prompt done')
        assert.ok(watched.looks >= 10, `the rows were read at ${watched.looks} changes and redraws`)
        assert.deepEqual(watched.bad, [], 'no row of the plan read failed or blocked during the restart')
      } finally {
        release()
        answer = demoResponder
      }
    })
  })
})
