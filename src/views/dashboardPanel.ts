/**
 * The dashboard inside the editor: one webview panel framing the page the editor's main peer
 * serves. The editor's own panel rather than the Simple Browser: the Simple Browser's
 * `simpleBrowser.show` hands the URL to the integrated browser (workbench.action.browser.open)
 * wherever that command exists, and in code-server 4.139 (VS Code 1.139) that opens nothing.
 */
import * as vscode from 'vscode'
import { Disposable } from '../common/disposable'

/** The panel's webview type (stable: it names the panel in the workbench's state). */
export const DASHBOARD_VIEW_TYPE = 'goalSwarm.dashboard'
/** The panel's tab title. */
export const DASHBOARD_TITLE = 'Goal Swarm Dashboard'

/** The webview's page: the dashboard at `url` in a frame that fills the panel; only that origin may be framed. */
export function dashboardHtml (url: string): string {
  const origin = new URL(url).origin
  const attr = (s: string): string => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src ${attr(origin)}; style-src 'unsafe-inline'">`,
    '<style>html, body, iframe { margin: 0; padding: 0; border: 0; width: 100%; height: 100%; overflow: hidden; display: block; }</style>',
    `</head><body><iframe src="${attr(url)}" title="${DASHBOARD_TITLE}"></iframe></body></html>`
  ].join('\n')
}

/**
 * Owns the one dashboard panel: show() opens it, or reveals it pointed at the URL given.
 * Scripts are enabled only so the framed page may run its own (a webview's sandbox carries
 * over to its frames); the panel's own page allows none (its CSP has no script-src).
 */
export class DashboardPanel extends Disposable {
  private panel: vscode.WebviewPanel | undefined
  private url = ''

  /** Opens the panel on `url` (an address the workbench can reach, from asExternalUri), or reveals it. */
  show (url: string): void {
    if (this.panel === undefined) {
      const panel = vscode.window.createWebviewPanel(DASHBOARD_VIEW_TYPE, DASHBOARD_TITLE, vscode.ViewColumn.Active, { enableScripts: true, retainContextWhenHidden: true })
      this.panel = panel
      this.url = ''
      panel.onDidDispose(() => { if (this.panel === panel) this.panel = undefined })
    } else {
      this.panel.reveal()
    }
    // Set once per URL: assigning the same html again reloads the frame and loses its state.
    if (this.url !== url) {
      this.url = url
      this.panel.webview.html = dashboardHtml(url)
    }
  }

  override dispose (): void {
    this.panel?.dispose()
    this.panel = undefined
    super.dispose()
  }
}
