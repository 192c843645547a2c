import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { warmUpModules } from '../../../services/core/runtime/warm-up-modules.ts';

const services = new URL('../../../services', import.meta.url).pathname;

describe('warmUpModules: what the image imports to warm its compile cache', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'warm-up-'));
    await mkdir(join(dir, 'app'));
    await mkdir(join(dir, 'core'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const url = (path: string): string => pathToFileURL(join(dir, path)).href;

  it("takes main.ts's imports (never main.ts) and every module loaded lazily, files and packages", async () => {
    await writeFile(
      join(dir, 'app/main.ts'),
      "import type { X } from '../core/x.ts';\nimport {\n  start,\n} from './start.ts';\nimport 'node:process';\nawait start();\n",
    );
    await writeFile(
      join(dir, 'core/store.ts'),
      "// import('./commented-out.ts') is only a comment\nexport const load = () => import('./s3.ts');\nconst m = await import(\"some-package\");\n",
    );
    expect(await warmUpModules(dir)).to.deep.equal(
      ['some-package', url('app/start.ts'), url('core/s3.ts')].sort(),
    );
  });

  it('refuses a dynamic import whose module is not a string literal', async () => {
    await writeFile(join(dir, 'core/pick.ts'), 'export const load = (m: string) => import(m);\n');
    const failed = await warmUpModules(dir).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(failed)).to.match(
      /pick\.ts: a dynamic import whose module is not a string literal/,
    );
  });

  it("finds the services' lazily loaded stores, bus and watermark store where they are now", async () => {
    const modules = await warmUpModules(services);
    for (const path of [
      'core/storage/s3-store.ts',
      'core/storage/azure-store.ts',
      'core/storage/gcs-store.ts',
      'core/bus/kafka-bus.ts',
      'core/watermarks/watermark-store.ts',
      'ingress/start-ingress.ts',
      'all-in-one/start-all-in-one.ts',
    ])
      expect(modules).to.include(pathToFileURL(join(services, path)).href);
    expect(modules.some((m) => m.endsWith('/main.ts'))).to.equal(false);
  });
});
