import type * as vscode from 'vscode'

/** Activation entry point (contributes.activationEvents). Filled by the extension issue. */
export function activate (_context: vscode.ExtensionContext): void {}

export function deactivate (): void {}
