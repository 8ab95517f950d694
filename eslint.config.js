import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = builtinModules.filter((name) => !name.startsWith('_') && !name.startsWith('node:'));

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', 'coverage/', 'bin/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // Fastify plugins and handlers are async by contract, with or without an await inside.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // The console's browser script: plain JavaScript served as is, outside the TypeScript project.
    files: ['src/ui/assets/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false, project: false },
      sourceType: 'script',
      globals: Object.fromEntries(
        ['window', 'document', 'fetch', 'setTimeout', 'DOMParser', 'Element', 'HTMLFormElement', 'FormData'].map((name) => [
          name,
          'readonly',
        ]),
      ),
    },
  },
  {
    files: ['workflows/**/*.ts', 'bench/baseline/workflows.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.flatMap((name) => [
              { name, message: 'Workflow code must be deterministic: no Node built-ins.' },
              { name: `node:${name}`, message: 'Workflow code must be deterministic: no Node built-ins.' },
            ]),
            { name: 'pg', message: 'Workflow code must not touch the database; use an activity.' },
            { name: 'fastify', message: 'Workflow code must not import the HTTP layer.' },
            { name: '@temporalio/client', message: 'Workflow code must not import the Temporal client.', allowTypeImports: true },
            { name: '@temporalio/worker', message: 'Workflow code must not import the worker.', allowTypeImports: true },
            { name: '@temporalio/activity', message: 'Workflow code must not import activity code.', allowTypeImports: true },
          ],
          patterns: [
            {
              regex: '(^|/)(src/(?!domain/)|activities/)',
              message: 'Workflow code imports only @temporalio/workflow, @temporalio/common, src/domain and workflows/.',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
);
