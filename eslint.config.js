// The project's lint rules: ESLint's and typescript-eslint's recommended sets, the type-checked ones
// included (one project service over tsconfig.json, so one TypeScript program for every file), and
// the architecture: which folder may import which, and which folders stay pure. Formatting is
// Prettier's (.prettierrc.json, 120 columns: two files side by side in a review), so the only style
// rule here is the width of what Prettier does not wrap (comments). `npm run lint` runs both; CI
// runs it before the tests, and test/architecture.test.ts shows through ESLint's API that the rules fail.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { architecture } from './eslint.architecture.js';

export default tseslint.config(
  { ignores: ['node_modules/**', 'build/**', 'dist/**', '.tmp/**', 'manifests/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Prettier wraps code at 120 but never a comment; strings, templates and regexes stay whole
      // (a message or a test's name is read and searched as one line).
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
      // `_`-prefixed names say "deliberately unused" (destructuring a field away, a callback's slot).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // node:test tracks its top-level tests and hooks itself; a subtest (t.test) must still be awaited,
      // or its parent ends first and cancels it.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      // A switch over a union names every member; a `default` is an explicit "everything else".
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      // Rethrowing or rejecting with what a catch caught (unknown) passes the original error on untouched.
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true }],
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // `never` in a template is the "cannot happen" message after an exhaustive check.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNever: true }],
      // Turned off from recommendedTypeChecked, each for noise without a bug behind it:
      // - require-await: fakes and ports implement Promise-returning interfaces with `async` on purpose
      //   (a throw becomes a rejection, as in the real implementation); an await would be a dummy.
      // - no-base-to-string: String() over decoded JSON fields of unknown type is how messages show
      //   what arrived; the rule cannot tell that they are scalars.
      // - unbound-method: the ports are plain objects typed with method shorthand; their callers use
      //   .call or the implementations do not use `this`, which the rule cannot see.
      // - no-unnecessary-type-assertion: style only; its fixes would touch some 70 lines across files
      //   other changes are moving.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
    },
  },
  {
    // Tests poke at raw JSON answers (the API stand-in, CEL, the hook's wire) where `any` is the honest
    // type, and so is reading and passing it on.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  // The configuration files are JavaScript outside tsconfig.json: no types to check them with.
  { files: ['**/*.js'], ...tseslint.configs.disableTypeChecked },
  ...architecture,
);
