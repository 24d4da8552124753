// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.data/**', 'eslint.config.mjs', 'jest.config.js'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-extraneous-class': 'off',
    },
  },
  {
    // undici 7 marks these dispatch-handler callbacks @deprecated: handlers use onRequestStart, onResponseStart,
    // onResponseData, onResponseEnd and onResponseError, pausing and aborting through the controller
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['MethodDefinition', 'PropertyDefinition', 'Property'].map((node) => ({
          selector: `${node}[key.name=/^(onConnect|onHeaders|onData|onComplete|onUpgrade|onBodySent|onResponseStarted)$/]`,
          message:
            "undici's deprecated dispatch callback: use onRequestStart/onResponseStart/onResponseData/onResponseEnd/onResponseError",
        })),
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'src/**/*.spec.ts', 'bench/**/*.ts'],
    rules: {
      // supertest bodies are untyped JSON; tests assert on them directly
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
