// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { LAYERING } from './test/architecture/layering-rules.ts';
import { layeringLintConfig } from './test/architecture/lint-restrictions.ts';

export default tseslint.config(
  // AssemblyScript sources of wasm modules: compiled by asc, not TypeScript.
  { ignores: ['node_modules/', 'dist/', 'coverage/', 'scratch/', 'web/dist/', 'examples/**/assembly/', 'test/fixtures/wasm/', 'bench/peers/node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      eqeqeq: ['error', 'always'],
      'no-console': 'error',
    },
  },
  {
    // In the built daemon (dist/daemon/) a module's URL is its chunk's: files are found from the
    // installation folder (src/config/installation.ts), never next to a module (decision 0031).
    files: ['src/**'],
    ignores: ['src/config/installation.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.type='MetaProperty'][property.name=/^(dirname|filename)$/]",
          message: "Find files with installedPath() (src/config/installation.ts): in the built daemon this is the chunk's folder.",
        },
        {
          selector: "NewExpression[callee.name='URL'] > MemberExpression.arguments[object.type='MetaProperty']",
          message: "Find files with installedPath() (src/config/installation.ts): in the built daemon this URL is the chunk's.",
        },
      ],
    },
  },
  // The layering of src/ (decision 0064): no import up the floors, another folder only through its
  // index, no node: module in the kernel or the runtime beyond the allowed ones. The same rules as
  // test/architecture/layering.test.ts, from the same list; the test also finds cycles.
  ...layeringLintConfig(LAYERING),
  {
    // The CLI, benchmarks and test fixtures talk to a terminal on purpose.
    files: ['src/cli/**', 'bench/**', 'bin/**', 'test/fixtures/**'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
);
