/**
 * The mark of text written by the offline demo model (peer/llm/offline-demo.ts). A leaf module,
 * so the editor's views can tell synthetic rows apart without loading the model itself.
 */

/** Every text the offline demo model writes starts with (or, in results, contains) this label. */
export const DEMO_LABEL = '[demo output]'

/** true when `text` starts with DEMO_LABEL (after leading whitespace). */
export function isDemoText (text: string): boolean {
  return text.trimStart().startsWith(DEMO_LABEL)
}

/** `text` without a leading DEMO_LABEL and the whitespace after it; other text is unchanged. */
export function withoutDemoLabel (text: string): string {
  const t = text.trimStart()
  return t.startsWith(DEMO_LABEL) ? t.slice(DEMO_LABEL.length).trimStart() : text
}
