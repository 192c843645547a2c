import { expect } from 'chai';
import { execFile, spawn } from 'node:child_process';
import {
  chmod,
  chown,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { freePort, SERVICE_NODE_ARGS, spawnCommand } from './support/spawn-service.ts';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;

/** One instruction of a Dockerfile: continuation lines joined, comments left out. */
interface Instruction {
  keyword: string;
  args: string;
}

function dockerInstructions(dockerfile: string): Instruction[] {
  return dockerfile
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => /^\s*(\S+)\s+(.*?)\s*$/.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({ keyword: (m[1] ?? '').toUpperCase(), args: m[2] ?? '' }));
}

/** The words of a shell command as `sh` would pass them (quotes, no expansion). */
function shellWords(command: string): string[] {
  if (/[$`]/.test(command)) throw new Error(`a build step with shell expansion: ${command}`);
  return [...command.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
}

/**
 * The image's build steps that cannot run on this machine, and why; every other step of the
 * final stage runs in the test below. A step that is neither fails the test until it is run or
 * named here.
 */
const CANNOT_RUN_HERE: { step: RegExp; why: string }[] = [
  {
    step: /^apt-get |^rm -rf \/var\/lib\/apt\/lists/,
    why: "Debian's packages, installed as root into the image: scripts/test-services/ffmpeg.sh installs the same ones on this machine for every test",
  },
  {
    step: /^COPY --from=vmaf /,
    why: "the libvmaf ffmpeg of the image's first stage, a pinned PyPI wheel: scripts/test-services/vmaf.sh fetches the same file for the tests",
  },
  {
    step: /^chown (-R )?node(:node)? /,
    why: "the node user comes with the node base image and is not on this machine: the image's layout test hands the folders to its uid (1000) itself",
  },
];

/** The final stage of the image, built in `at('/')`: its steps that ran and those it could not. */
async function buildImageHere(
  dockerfile: string,
  at: (path: string) => string,
): Promise<{ env: Record<string, string>; workdir: string; skipped: string[] }> {
  const all = dockerInstructions(dockerfile);
  const stage = all.slice(all.findLastIndex((i) => i.keyword === 'FROM') + 1);
  const env: Record<string, string> = {};
  const skipped: string[] = [];
  let workdir = '/';
  const cannotRun = (step: string): boolean => {
    if (!CANNOT_RUN_HERE.some((c) => c.step.test(step))) return false;
    skipped.push(step);
    return true;
  };
  const mapped = (value: string): string => (value.startsWith('/') ? at(value) : value);
  for (const { keyword, args } of stage) {
    if (keyword === 'WORKDIR') workdir = args;
    if (keyword === 'WORKDIR') await mkdir(at(workdir), { recursive: true });
    if (keyword === 'ENV') {
      const eq = args.indexOf('=');
      env[args.slice(0, eq)] = args.slice(eq + 1);
    }
    if (keyword === 'COPY' && !cannotRun(`COPY ${args}`)) {
      const words = shellWords(args);
      const dest = join(at(workdir), words.pop() ?? '.');
      for (const source of words)
        await cp(join(root, source), words.length > 1 ? join(dest, source) : dest, {
          recursive: true,
        });
    }
    if (keyword !== 'RUN') continue;
    for (const step of args.split(/\s+&&\s+/)) {
      if (cannotRun(step)) continue;
      const [command = '', ...rest] = shellWords(step);
      const stepEnv = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, mapped(v)]));
      if (command === 'mkdir') await run('mkdir', rest.map(mapped));
      else if (command === 'node' || command === 'npm')
        await run(command === 'node' ? process.execPath : 'npm', rest, {
          cwd: at(workdir),
          env: { ...process.env, ...stepEnv },
          maxBuffer: 16 * 1024 * 1024,
        }).catch((e: unknown) => {
          throw new Error(`the image's build step failed: ${step}`, { cause: e });
        });
      else throw new Error(`a build step this test neither runs nor names: ${step}`);
    }
  }
  return {
    env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, mapped(v)])),
    workdir,
    skipped,
  };
}

// No Docker engine here: the image's final stage is built in a clean folder as its Dockerfile
// says (its COPY lines, `npm ci --omit=dev` from the lockfile, the compile cache's warm-up with
// the image's NODE_OPTIONS), every step that can run here run for real, then the all-in-one
// service started from it with the image's environment. A lockfile out of step with
// package.json, a runtime import of a dev dependency, or a warm-up that imports a module that
// is not there fails this test as it would fail `docker build`.
describe("packaging: the image's build steps, run here", function () {
  this.timeout(300_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'media-packaging-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('builds the final stage from the lockfile, warms the compile cache, and the all-in-one service starts and takes a job', async () => {
    const at = (path: string): string => join(dir, path);
    const built = await buildImageHere(await readFile(join(root, 'Dockerfile'), 'utf8'), at);
    for (const step of built.skipped) {
      const why = CANNOT_RUN_HERE.find((c) => c.step.test(step))?.why;
      console.log(`      not run here: ${step.slice(0, 60)}… (${why})`);
    }
    expect(built.skipped.length, 'steps not run').to.be.below(8);
    const app = at(built.workdir);
    const lock = JSON.parse(await readFile(join(app, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    expect(Object.keys(lock.packages).length).to.be.greaterThan(100);
    expect(await readdir(join(app, 'node_modules', 'koa'))).to.include('package.json');
    expect(await readdir(join(app, 'node_modules'))).not.to.include('mocha');
    const cache = built.env['NODE_COMPILE_CACHE'] ?? '';
    expect(cache, 'ENV NODE_COMPILE_CACHE').to.not.equal('');
    const cached = await readdir(cache, { recursive: true });
    expect(cached.length, 'compile cache entries').to.be.greaterThan(100);

    const port = await freePort();
    const service = spawnCommand(
      process.execPath,
      ['services/all-in-one/main.ts'],
      {
        ...built.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATA_DIR: join(dir, '.data'),
        API_KEYS: 'packaging-test-key-0123456789:acme',
        LOG_LEVEL: 'info',
      },
      { cwd: app },
    );
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
    // The service found every module it loaded in the cache but its main.ts (which the warm-up
    // never imports: it starts the service), whose stripped code and compiled code it added.
    const added = (await readdir(cache, { recursive: true })).filter((e) => !cached.includes(e));
    expect(added, 'cache entries the service added').to.have.length(2);
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
    expect(starts).to.have.length(6);
    // `exec`: the shell npm runs a script in becomes the service, so npm's forwarded SIGTERM
    // reaches it (test/integration/kafka-npm-start-signal.test.ts).
    for (const [name, command] of starts)
      expect(command, name).to.match(new RegExp(`^exec node ${flags} services/[a-z-]+/main\\.ts$`));
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).to.include(`ENV NODE_OPTIONS=${flags}\n`);
    // Before the compile cache is warmed: V8 takes a code cache only from the same flags.
    expect(dockerfile.indexOf('ENV NODE_OPTIONS')).to.be.lessThan(dockerfile.indexOf('RUN node'));
  });
});

/** What the Dockerfile says about where the service runs, as the image will have it. */
interface ImageLayout {
  workdir: string;
  env: Record<string, string>;
  /** Folders made at build time and handed to the node user (`RUN mkdir -p … && chown node:node …`). */
  nodeOwned: string[];
  volumes: string[];
  user: string | undefined;
  cmd: string[];
}

function readImageLayout(dockerfile: string): ImageLayout {
  const layout: ImageLayout = {
    workdir: '/',
    env: {},
    nodeOwned: [],
    volumes: [],
    user: undefined,
    cmd: [],
  };
  for (const line of dockerfile.replace(/\\\n/g, ' ').split('\n')) {
    const [instruction = '', ...rest] = line.trim().split(/\s+/);
    const args = rest.join(' ');
    if (instruction === 'WORKDIR') layout.workdir = args;
    if (instruction === 'ENV') {
      const at = args.indexOf('=');
      layout.env[args.slice(0, at)] = args.slice(at + 1);
    }
    if (instruction === 'RUN' && /^mkdir -p (\S+) && chown node:node \1$/.test(args))
      layout.nodeOwned.push(args.split(' ')[2] ?? '');
    if (instruction === 'VOLUME') layout.volumes.push(...args.split(/\s+/));
    if (instruction === 'USER') layout.user = args;
    if (instruction === 'CMD') layout.cmd = JSON.parse(args) as string[];
  }
  return layout;
}

const NODE_UID = 1000;
const asRoot = process.getuid?.() === 0;
const runUid = asRoot ? NODE_UID : (process.getuid?.() ?? NODE_UID);
const code = ['package.json', 'schemas', 'services'];
let base: string;
let app = '';

// No Docker engine here: the image's filesystem is laid out as its Dockerfile makes it (the
// code owned by root, the data folder made and handed to the node user, uid 1000 in the
// node images), and its default command is run as that user. As root, that is uid 1000
// through setpriv; as any other user (chown and setpriv need root), it is this user, with the
// code made read-only, as root's code is to the node user: the same check either way.
describe("packaging: the image's default command runs as the node user", function () {
  this.timeout(120_000);

  before(async () => {
    base = await mkdtemp(join(tmpdir(), 'media-image-'));
    await chmod(base, 0o755);
  });
  after(async () => {
    if (!base) return;
    if (!asRoot && app) {
      await chmod(app, 0o755).catch(() => undefined);
      await run('chmod', ['-R', 'u+w', ...code.map((entry) => join(app, entry))]).catch(
        () => undefined,
      );
    }
    await rm(base, { recursive: true, force: true });
  });

  describesDeclaresDataFolderOwned();
});

/**
 * The image's filesystem under `base`, as its Dockerfile makes it: the code root's (read-only
 * when not run as root), the node user's folders handed over, an open /tmp.
 */
async function layOutImage(
  layout: ReturnType<typeof readImageLayout>,
  at: (path: string) => string,
): Promise<void> {
  await mkdir(app, { recursive: true });
  for (const entry of code) await cp(join(root, entry), join(app, entry), { recursive: true });
  // Hard links, not a symlink: the node user must reach the modules, and a checkout under a
  // folder only root may enter (CI's clone) would hide them behind a link.
  await run('cp', ['-al', join(root, 'node_modules'), join(app, 'node_modules')]).catch(() =>
    symlink(join(root, 'node_modules'), join(app, 'node_modules')),
  );
  const handOver = async (path: string): Promise<void> => {
    await mkdir(path, { recursive: true });
    if (asRoot) await chown(path, NODE_UID, NODE_UID);
  };
  for (const path of layout.nodeOwned) await handOver(at(path));
  // The image's /tmp: empty and open to every user (job work folders go there).
  await mkdir(at('/tmp'), { recursive: true });
  await chmod(at('/tmp'), 0o1777);
  const cache = layout.env['NODE_COMPILE_CACHE'];
  if (cache) await handOver(at(cache));
  if (!asRoot) {
    // What root's 755 folders and 644 files are to the node user.
    await run('chmod', ['-R', 'a-w', ...code.map((entry) => join(app, entry))]);
    await chmod(app, 0o555);
  }
}

function describesDeclaresDataFolderOwned(): void {
  it('declares a data folder owned by node as a volume, and all-in-one mode starts and answers /readyz', async () => {
    const layout = readImageLayout(await readFile(join(root, 'Dockerfile'), 'utf8'));
    expect(layout.user).to.equal('node');
    const dataDir = layout.env['DATA_DIR'] ?? '';
    expect(dataDir, 'ENV DATA_DIR').to.match(/^\//);
    expect(layout.nodeOwned).to.include(dataDir);
    expect(layout.volumes).to.include(dataDir);
    expect(layout.cmd).to.deep.equal(['node', 'services/all-in-one/main.ts']);

    // The image's paths, under `base`; the code is root's, as COPY leaves it.
    const at = (path: string): string => join(base, path);
    app = at(layout.workdir);
    await layOutImage(layout, at);
    const cache = layout.env['NODE_COMPILE_CACHE'];

    const [port, metricsPort] = [await freePort(), await freePort()];
    const env = {
      ...layout.env,
      ...(cache ? { NODE_COMPILE_CACHE: at(cache) } : {}),
      DATA_DIR: at(dataDir),
      TMPDIR: at('/tmp'),
      HOST: '127.0.0.1', // 0.0.0.0 in the image; here only this machine may reach it
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      PATH: process.env['PATH'] ?? '',
    };
    const [command, ...args] = layout.cmd;
    expect(command).to.equal('node');
    const asNode = ['--', process.execPath, ...args];
    const child = asRoot
      ? spawn(
          'setpriv',
          [`--reuid=${NODE_UID}`, `--regid=${NODE_UID}`, '--clear-groups', ...asNode],
          { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] },
        )
      : spawn(process.execPath, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const keep = (chunk: Buffer): void =>
      void (stderr = (stderr + chunk.toString('utf8')).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const ready = async (url: string): Promise<boolean> =>
        fetch(url).then(
          (r) => r.status === 200,
          () => false,
        );
      const deadline = Date.now() + 60_000;
      while (!(await ready(`http://127.0.0.1:${port}/readyz`))) {
        expect(child.exitCode, `exited early: ${stderr.slice(-800)}`).to.equal(null);
        expect(Date.now(), `no /readyz within 60 s: ${stderr.slice(-800)}`).to.be.below(deadline);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(await ready(`http://127.0.0.1:${metricsPort}/readyz`)).to.equal(true);
      // What it wrote is in the data folder, the node user's; the code folder took nothing.
      for (const name of ['bus.sqlite', 'api-key', 'webhook-secret'])
        expect((await stat(join(at(dataDir), name))).uid, name).to.equal(runUid);
      const made = cache ? [relative(app, at(cache))] : [];
      expect((await readdir(app)).sort()).to.deep.equal(
        [...made, 'node_modules', 'package.json', 'schemas', 'services'].sort(),
      );
    } finally {
      child.kill('SIGTERM');
      const code = await exited;
      expect(code, stderr.slice(-800)).to.be.oneOf([0, null]);
    }
  });
}

/** docker-compose.yml's services, each as its block of text (two-space keys under `services:`). */
function composeServices(compose: string): Map<string, string> {
  const body = compose.slice(compose.indexOf('\nservices:\n') + '\nservices:\n'.length);
  const services = new Map<string, string>();
  for (const block of body.split(/\n(?=  [a-z][\w-]*:\n)/)) {
    const name = /^ {2}([a-z][\w-]*):/.exec(block)?.[1];
    if (name) services.set(name, block);
  }
  return services;
}

// No Docker engine here to run it: what can be read from the file is checked.
describe('packaging: docker-compose.yml', () => {
  it('pins every image, signs callbacks, and starts each service once what it needs is healthy', async () => {
    const compose = await readFile(join(root, 'docker-compose.yml'), 'utf8');
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    const services = composeServices(compose);
    expect([...services.keys()]).to.include.members(['kafka', 'ingress', 'notifier', 'grafana']);
    for (const [name, block] of services) {
      const image = /\n {4}image: (\S+)/.exec(block)?.[1];
      const built = /<<: \*service/.test(block);
      expect(image !== undefined || built, `${name}: an image or the service build`).to.equal(true);
      if (image)
        expect(image, name)
          .to.match(/:[\w.-]+$/)
          .and.not.match(/:latest$/);
    }
    // Whatever a service waits on answers a health check (its own, or the image's).
    const awaited = [
      ...compose.matchAll(/\n {4,6}([a-z][\w-]*): \{ condition: service_healthy \}/g),
    ];
    expect(awaited.length).to.be.greaterThan(5);
    for (const [, name = ''] of awaited) {
      const block = services.get(name) ?? '';
      const built = /<<: \*service/.test(block);
      expect(
        /\n {4}healthcheck:/.test(block) || (built && /\nHEALTHCHECK /.test(dockerfile)),
        `${name}: a health check`,
      ).to.equal(true);
    }
    expect(compose).not.to.match(/condition: service_started/);
    expect(compose).not.to.match(/depends_on: \[/);
    expect(compose).to.match(/\n {4}WEBHOOK_SECRETS: \$\{WEBHOOK_SECRETS:\?/);
    expect(compose).to.match(/\n {2}depends_on:\n {4}kafka: \{ condition: service_healthy \}/);
  });
});
