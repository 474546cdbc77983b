/**
 * The part of VS Code's Memento (vscode.Memento) the extension's remembered records use, so the
 * code that reads and writes them stays testable without VS Code.
 */
export interface StateStore {
  get<T>(key: string): T | undefined
  update(key: string, value: unknown): Thenable<void>
}
