/**
 * The dashboard of one running peer (CLI --dashboard-port): the server (server.ts) over the
 * peer's plan state, drop counters, message events and result blobs. Read-only: it publishes
 * nothing and changes no state.
 */
import type { Logger } from '../log'
import type { PeerRuntime } from '../net/runtime'
import { buildTree } from '../../plan/read/tree'
import { FlowLog } from './flow'
import { startDashboard, type DashboardServer } from './server'
import { dashboardSnapshot, findTask } from './snapshot'

export { type DashboardServer } from './server'

export interface PeerDashboardOptions {
  host: string
  port: number
  /** Folder of the page files (dist/dashboard in the bundle). */
  pageDir: string
  /** Apache ECharts' browser build (dist/echarts/echarts.min.js in the bundle). */
  echartsFile: string
}

/**
 * Serves the dashboard of `rt`. @throws as startDashboard (missing page file, port in use)
 */
export async function startPeerDashboard (rt: PeerRuntime, opts: PeerDashboardOptions, log: Logger): Promise<DashboardServer> {
  const config = rt.config
  const flow = new FlowLog(rt.bus, rt.drops)
  const bootedAt = Date.now()
  let server: DashboardServer
  try {
    server = await startDashboard({
      snapshot: () => dashboardSnapshot({
        state: rt.state,
        nowUs: rt.now(),
        rules: rt.rules,
        self: { peer_id: rt.peerId, role: config.role, swarm: config.swarm, ...(config.displayName === undefined ? {} : { name: config.displayName }) },
        booted_at_ms: bootedAt,
        connected_peers: rt.node.getPeers().length,
        anchors: rt.anchorStates(),
        drops: rt.drops.snapshot(),
        ...(config.modelPrices === undefined ? {} : { prices: config.modelPrices }),
        flow: flow.recent()
      }),
      output: async (nodeId) => {
        const leaf = findTask(buildTree(rt.state, { nowUs: rt.now(), rules: rt.rules }), nodeId)
        if (leaf === undefined || (leaf.output === null && leaf.output_sha256 === null)) return null
        // An executor's failure notice has no ResultMsg: its reason is the whole text.
        if (leaf.output_sha256 === null) return leaf.output
        return await rt.getOutput(nodeId)
      },
      onChange: (fn) => flow.onChange(fn)
    }, { host: opts.host, port: opts.port, pageDir: opts.pageDir, echartsFile: opts.echartsFile, log })
  } catch (err) {
    flow.dispose()
    throw err
  }
  return {
    url: server.url,
    port: server.port,
    close: async () => { flow.dispose(); await server.close() }
  }
}
