import type * as vscode from 'vscode'

/**
 * Base class for things that own other disposables (timers, listeners, child objects):
 * `_register` collects them and `dispose` releases them once, in reverse order, so a child
 * registered after its dependency is torn down before it.
 */
export abstract class Disposable implements vscode.Disposable {
  private readonly _disposables: vscode.Disposable[] = []
  private _isDisposed = false

  protected get isDisposed (): boolean { return this._isDisposed }

  /** Takes ownership of `d`; disposes it at once when this object is already disposed. */
  protected _register<T extends vscode.Disposable> (d: T): T {
    if (this._isDisposed) d.dispose()
    else this._disposables.push(d)
    return d
  }

  dispose (): void {
    if (this._isDisposed) return
    this._isDisposed = true
    for (const d of this._disposables.splice(0).reverse()) {
      try { d.dispose() } catch { /* one failing child must not keep the others alive */ }
    }
  }
}

/** A disposable from a plain function (vscode.Disposable.from needs the vscode module). */
export function toDisposable (fn: () => void): vscode.Disposable {
  return { dispose: fn }
}
