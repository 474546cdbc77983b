/** Command ids (package.json contributes.commands; category "Goal Swarm"). */
export const Commands = {
  submitGoal: 'goalSwarm.submitGoal',
  startPeer: 'goalSwarm.startPeer',
  stopPeer: 'goalSwarm.stopPeer',
  restartPeer: 'goalSwarm.restartPeer',
  contributeExecutor: 'goalSwarm.contributeExecutor',
  stopContributing: 'goalSwarm.stopContributing',
  startLocalSwarm: 'goalSwarm.startLocalSwarm',
  stopLocalSwarm: 'goalSwarm.stopLocalSwarm',
  openResult: 'goalSwarm.openResult',
  saveResultAs: 'goalSwarm.saveResultAs',
  exportPlan: 'goalSwarm.exportPlan',
  copyPrompt: 'goalSwarm.copyPrompt',
  showLog: 'goalSwarm.showLog',
  setApiKey: 'goalSwarm.setApiKey',
  clearApiKey: 'goalSwarm.clearApiKey',
  copyMyAddress: 'goalSwarm.copyMyAddress',
  connectToPeer: 'goalSwarm.connectToPeer',
  removeFromView: 'goalSwarm.removeFromView',
  clearFinishedPlans: 'goalSwarm.clearFinishedPlans',
  openResultPreview: 'goalSwarm.openResultPreview',
  openDashboard: 'goalSwarm.openDashboard',
  cancelPlan: 'goalSwarm.cancelPlan',
  showPlanTimeline: 'goalSwarm.showPlanTimeline',
  approveSplit: 'goalSwarm.approveSplit',
  rejectSplit: 'goalSwarm.rejectSplit',
  editSplit: 'goalSwarm.editSplit',
  publishSplit: 'goalSwarm.publishSplit',
  retryPrompt: 'goalSwarm.retryPrompt',
  resplitGoal: 'goalSwarm.resplitGoal',
  cancelBranch: 'goalSwarm.cancelBranch',
  /** Not contributed (no palette entry): the chat's "Show in Plan View" button, with a goal id. */
  revealPlan: 'goalSwarm.revealPlan',
  chooseChatModel: 'goalSwarm.chooseChatModel'
} as const
export type CommandId = (typeof Commands)[keyof typeof Commands]

/** Context keys set by the extension (used in `when` clauses of package.json). */
export const ContextKeys = {
  peerRunning: 'goalSwarm.peerRunning',
  contributing: 'goalSwarm.contributing',
  localSwarmRunning: 'goalSwarm.localSwarmRunning',
  hasPlan: 'goalSwarm.hasPlan'
} as const
