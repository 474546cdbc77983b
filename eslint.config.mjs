import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.vscode-test/**', 'out/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['src/peer/**/*.ts'],
    rules: {
      // DESIGN: src/peer never imports vscode (it also runs as the headless CLI).
      'no-restricted-imports': ['error', { paths: [{ name: 'vscode', message: 'src/peer must not depend on vscode' }] }]
    }
  },
  {
    files: ['src/plan/**/*.ts'],
    rules: {
      // DESIGN "Processes and folders": the plan core is imported by the peer and the editor and imports neither.
      'no-restricted-imports': ['error', {
        paths: [{ name: 'vscode', message: 'src/plan must not depend on vscode' }],
        patterns: [{ group: ['**/peer/**', '**/extension/**', '**/views/**', '**/common/**'], message: 'src/plan imports only itself (and libraries)' }]
      }]
    }
  },
  {
    files: ['src/views/**/*.ts', 'src/common/**/*.ts'],
    rules: {
      // DESIGN "Processes and folders": imports point down, src/extension -> src/views -> src/common.
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/extension/**'], message: 'src/views and src/common must not import src/extension' }] }]
    }
  },
  {
    files: ['src/common/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/extension/**', '**/views/**'], message: 'src/common imports neither src/extension nor src/views' }] }]
    }
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error'
    }
  }
)
