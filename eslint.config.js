// Type-checked lint, plus the architecture's import boundaries: services never import each
// other (the all-in-one launcher composes them), core imports no service, and only the bus and
// storage modules import kafkajs and the cloud SDKs.
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

const services = ['ingress', 'transcoder', 'summarizer', 'streamer', 'notifier', 'all-in-one'];
const otherServices = (self) =>
  services
    .filter((s) => s !== self)
    .map((s) => ({
      group: [`../${s}/*`, `../../${s}/*`],
      message: 'services never import each other; share through core/',
    }));
const sdks = [
  {
    group: ['kafkajs', '@kafkajs/*'],
    message: 'only services/core/bus/kafka-*.ts imports kafkajs',
  },
  {
    group: ['@aws-sdk/*', '@azure/*', '@google-cloud/*'],
    message: 'only services/core/storage/*-store.ts imports cloud SDKs',
  },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'services/core/contracts/types.generated.ts',
      '.data/',
      'test/support/*.cjs',
      // The stream playback test's page script runs in the browser, outside the TS project.
      'test/integration/stream-playback/*.js',
    ],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts'],
    },
    rules: { 'import-x/no-cycle': 'error' },
  },
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      // Functions that implement an async interface need not await anything.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
    },
  },
  ...services.map((self) => ({
    files: [`services/${self}/**/*.ts`],
    ignores: self === 'all-in-one' ? ['**'] : [],
    rules: { 'no-restricted-imports': ['error', { patterns: [...otherServices(self), ...sdks] }] },
  })),
  {
    files: ['services/core/**/*.ts'],
    ignores: ['services/core/bus/kafka*.ts', 'services/core/storage/*-store.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: services.map((s) => `**/${s}/*`), message: 'core imports no service' },
            ...sdks,
          ],
        },
      ],
    },
  },
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-expressions': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
);
