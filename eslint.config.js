// The project's lint rules: ESLint's and typescript-eslint's recommended sets (the rules most
// TypeScript projects start from), kept small; formatting is Prettier's (.prettierrc.json), so no
// style rules here. `npm run lint` runs both; CI runs it before the tests.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'build/**', 'dist/**', '.tmp/**', 'manifests/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: 'module' },
    rules: {
      // `_`-prefixed names say "deliberately unused" (destructuring a field away, a callback's slot).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    // Tests poke at raw JSON answers (the API stand-in, CEL, the hook's wire) where `any` is the honest type.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
