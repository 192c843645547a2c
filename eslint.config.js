// Type-checked lint, plus the architecture's import boundaries: services never import each
// other (the all-in-one launcher composes them), core imports no service, no import inside core
// runs up its layers (coreLayers), and only the bus and storage modules (and the watermark
// library's bucket adapter) import kafkajs and the cloud SDKs.
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
    message:
      'only services/core/storage/*-store.ts (and the watermark bucket, core/watermarks/watermark-store.ts) imports cloud SDKs',
  },
];

// The layers inside services/core, lowest first: a module imports from its own layer or the
// ones below, never from one above. Base: errors, time, config, settings, observability, net,
// crypto, contracts, scheduling. Then bus (transport), events (the codec over bus records),
// callbacks/storage/media (leaf capabilities), watermarks (a library built on storage and
// media), status (read models of the job event log), worker (the consumer loop), media-job (a
// media job's steps, run by the worker), runtime (wiring). docs/design.md says the same.
const coreLayers = [
  {
    name: 'base',
    folders: ['observability', 'net', 'crypto', 'contracts', 'scheduling'],
    files: [
      '*.ts',
      'observability/**/*.ts',
      'net/**/*.ts',
      'crypto/**/*.ts',
      'contracts/**/*.ts',
      'scheduling/**/*.ts',
    ],
  },
  { name: 'bus', folders: ['bus'] },
  { name: 'events', folders: ['events'] },
  { name: 'callbacks, storage and media', folders: ['callbacks', 'storage', 'media'] },
  { name: 'watermarks', folders: ['watermarks'] },
  { name: 'status', folders: ['status'] },
  { name: 'worker', folders: ['worker'] },
  { name: 'media-job', folders: ['media-job'] },
  { name: 'runtime', folders: ['runtime'] },
].map((layer) => ({ ...layer, files: layer.files ?? layer.folders.map((f) => `${f}/**/*.ts`) }));
const layerOrder = coreLayers.map((l) => l.name).join(' < ');
const corePatterns = (at, sdkPatterns) => [
  { group: services.map((s) => `**/${s}/*`), message: 'core imports no service' },
  ...coreLayers.slice(at + 1).flatMap((above) =>
    above.folders.map((folder) => ({
      group: [`**/${folder}/*`],
      message: `core/${coreLayers[at].name} imports no layer above it, here core/${folder}/ (lowest first: ${layerOrder}); move what both need down`,
    })),
  ),
  ...sdkPatterns,
];
// The modules that may import an SDK (see sdks), with their layer.
const sdkModules = [
  { files: ['services/core/bus/kafka*.ts'], layer: 'bus' },
  { files: ['services/core/storage/*-store.ts'], layer: 'callbacks, storage and media' },
  // The watermark library's bucket adapter: it implements the library's interface and error,
  // which live in the watermarks layer (storage, below it, may not import them).
  { files: ['services/core/watermarks/watermark-store.ts'], layer: 'watermarks' },
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
  // One rule per layer of core (coreLayers, above): no service, no layer above, no SDK.
  ...coreLayers.map((layer, at) => ({
    files: layer.files.map((f) => `services/core/${f}`),
    rules: { 'no-restricted-imports': ['error', { patterns: corePatterns(at, sdks) }] },
  })),
  // The modules that wrap an SDK: the same rule as their layer's, less the SDKs.
  ...sdkModules.map(({ files, layer }) => ({
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: corePatterns(
            coreLayers.findIndex((l) => l.name === layer),
            [],
          ),
        },
      ],
    },
  })),
  // No function over 80 lines (closures included: break them into named steps) in the services,
  // the benches, the scripts and the tests. In a test file a long describe registers its cases
  // through named functions (one per group of its), and a long it reads as named checks.
  {
    files: ['services/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts', 'test/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
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
