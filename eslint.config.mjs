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
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error'
    }
  }
)
