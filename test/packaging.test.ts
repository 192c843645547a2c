import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, SERVICE_NODE_ARGS, spawnService } from './support/spawn-service.ts';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;

// The Docker image is built with `npm ci --omit=dev --ignore-scripts` from the checked-in
// lockfile and the schemas and services folders (Dockerfile). The same steps here, in a clean
// folder, then the all-in-one service started from it: a lockfile out of step with
// package.json, or a runtime import of a dev dependency, fails this test.
describe('packaging: the production install from the lockfile', function () {
  this.timeout(300_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-packaging-'));
    for (const entry of ['package.json', 'package-lock.json', 'schemas', 'services'])
      await cp(join(root, entry), join(dir, entry), { recursive: true });
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('npm ci --omit=dev installs from the lockfile, and the all-in-one service starts and takes a job', async () => {
    const installed = await run(
      'npm',
      ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'],
      { cwd: dir, env: { ...process.env, NODE_ENV: 'production' }, maxBuffer: 16 * 1024 * 1024 },
    );
    expect(installed.stderr).not.to.match(/npm error/);
    const lock = JSON.parse(await readFile(join(dir, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    expect(Object.keys(lock.packages).length).to.be.greaterThan(100);

    const port = await freePort();
    const service = spawnService(join(dir, 'services/all-in-one/main.ts'), {
      PORT: String(port),
      DATA_DIR: join(dir, '.data'),
      API_KEYS: 'packaging-test-key-0123456789:acme',
      LOG_LEVEL: 'info',
    });
    try {
      await service.waitForLog((r) => r['msg'] === 'ingress.listening', 60_000);
      const res = await fetch(`http://127.0.0.1:${port}/transcode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          apiKey: 'packaging-test-key-0123456789',
          inputUrl: 'https://media.example.com/in.mp4',
          outputUrl: 'https://media.example.com/out.mp4',
          encoder: 'h264',
          container: 'mp4',
          bitrateKbps: '1000',
        }),
      });
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { status: string }).status).to.equal('queued');
    } finally {
      expect(await service.stop()).to.equal(0);
    }
  });
});

describe("packaging: Node's options of the services", () => {
  it('npm start scripts, the image and the spawned services of tests and benchmarks agree', async () => {
    const scripts = (
      JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    const flags = SERVICE_NODE_ARGS.join(' ');
    const starts = Object.entries(scripts).filter(([name]) => /^start(:|$)/.test(name));
    expect(starts).to.have.length(5);
    for (const [name, command] of starts)
      expect(command, name).to.match(new RegExp(`^node ${flags} services/[a-z-]+/main\\.ts$`));
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).to.include(`ENV NODE_OPTIONS=${flags}\n`);
    // Before the compile cache is warmed: V8 takes a code cache only from the same flags.
    expect(dockerfile.indexOf('ENV NODE_OPTIONS')).to.be.lessThan(dockerfile.indexOf('RUN node'));
  });
});
