// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', '.settle/**', '.tools/**', 'bin/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe/test return promises the runner itself awaits.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code is replayed: no Node built-ins, no I/O, no configuration.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'Workflow code must not import Node built-ins.' },
            {
              group: [
                'fs',
                'path',
                'http',
                'https',
                'net',
                'crypto',
                'child_process',
                'os',
                'pg',
                'fastify',
                'pino',
              ],
              message: 'Workflow code must stay deterministic: no I/O.',
            },
            {
              group: [
                '../activities',
                '../activities/*',
                '../db/*',
                '../gateway/*',
                '../config',
                '../stack/*',
              ],
              allowTypeImports: true,
              message: 'Import activities as types only; no I/O modules in workflows.',
            },
          ],
        },
      ],
    },
  },
);
