// Side-by-side benchmark, one run: accepted submissions per second of the ingress against a bare
// Koa app that reads the same JSON body and answers an acknowledgement, and against the floor
// (durable-floor.ts: the bare app plus the durable write to the same bus, nothing else), all
// driven by autocannon (32 connections), each round starting with the next of the three. Then
// p99 latency of the ingress and the bare app at half the ingress's maximum rate; the CPU time
// each process used per accepted request (from /proc: on a machine shared with other work it says
// more than the rates); and the CPU the whole machine used per accepted request (autocannon and
// any broker included) beside the most it may use for the ingress to reach half the bare rate.
// Modes: `embedded` (the all-in-one process on its SQLite bus, workers running) and `kafka` (the
// ingress alone on the real broker of TEST_KAFKA_BROKERS, acks=all).
// Usage: npm run bench:ingress -- [seconds=8] [rounds=2] [modes=embedded,kafka]
// BENCH_SERVICE_ROOT=<checkout> measures that checkout's services instead. With BENCH_CPU_PROF_DIR
// set, the service process writes a V8 CPU profile there (node --cpu-prof).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { createServer as createNetServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SERVICE_NODE_ARGS } from '../test/support/spawn-service.ts';
import { cpuSeconds, machineBusySeconds } from './proc.ts';
import { median } from './stats.ts';

interface CannonResult {
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
  latency: { p50: number; p99: number };
}
type Cannon = (options: Record<string, unknown>) => Promise<CannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Cannon;

const seconds = Number(process.argv[2] ?? 8);
const rounds = Number(process.argv[3] ?? 2);
const modes = (process.argv[4] ?? 'embedded,kafka').split(',');
const KEY = 'bench-key-0123456789abcdef';
/** The benchmark measures the ingress's capacity: one key sends everything, so no per-key limits. */
const UNLIMITED = { RATE_LIMIT_PER_SECOND: '0', MAX_ACTIVE_JOBS_PER_ORG: '0' };
const CONNECTIONS = 32;
const root = new URL('..', import.meta.url).pathname;

interface Target {
  name: string;
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createNetServer().listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
    s.once('error', reject);
  });

/** Starts a node process and resolves once it prints `ready` (a log event name) on stdout. */
async function startProcess(
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: string,
): Promise<Target> {
  const port = await freePort();
  const profileDir = process.env['BENCH_CPU_PROF_DIR'];
  const profile =
    profileDir && name !== 'bare Koa' && name !== 'floor'
      ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
      : [];
  // BENCH_SERVICE_ROOT: another checkout whose services to measure (a before/after comparison).
  // The bare app and the floor are this checkout's.
  const ours = name === 'bare Koa' || name === 'floor';
  const cwd = ours ? root : (process.env['BENCH_SERVICE_ROOT'] ?? root);
  // The services run with Node's options as deployed; the bare app with Node's defaults.
  const nodeArgs = name === 'bare Koa' ? [] : SERVICE_NODE_ARGS;
  const child = spawn(process.execPath, [...profile, ...nodeArgs, ...args], {
    cwd,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
    lines.on('line', (line) => {
      if (line.includes(ready)) resolve();
    });
  });
  // Logs keep being written (and parsed by nobody), as they would be to a collector.
  lines.on('line', () => undefined);
  return {
    name,
    child,
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Holds every request open: workers in all-in-one mode sit on their downloads, as on long jobs. */
async function startHoldingServer(): Promise<{ url: string; server: Server }> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, server };
}

function requestBody(inputUrl: string): string {
  return JSON.stringify({
    apiKey: KEY,
    inputUrl,
    outputUrl: 's3://bench-bucket/out/video.mp4',
    outputCreds: {
      region: 'eu-west-1',
      accessKeyId: 'AKIABENCHMARK0000000',
      secretAccessKey: 'benchmark-secret-key-0000000000000000000',
    },
    encoder: 'h264',
    container: 'mp4',
    bitrateKbps: '2000',
    width: 1280,
    height: 720,
    successUrl: 'https://hooks.example.com/media/done',
    failureUrl: 'https://hooks.example.com/media/failed',
  });
}

async function fire(url: string, body: string, extra: Record<string, unknown> = {}) {
  return autocannon({
    url: `${url}/transcode`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: CONNECTIONS,
    duration: seconds,
    ...extra,
  });
}

/** CPU time (user + system) the process used so far, ms. */
const cpuMs = async (pid: number | undefined): Promise<number> => (await cpuSeconds(pid)) * 1000;

async function startService(mode: string, dataDir: string): Promise<Target> {
  if (mode === 'embedded')
    return startProcess(
      'all-in-one',
      ['services/all-in-one/main.ts'],
      {
        API_KEYS: `${KEY}:bench`,
        ...UNLIMITED,
        DATA_DIR: dataDir,
        ALLOW_PRIVATE_NETWORKS: 'true',
        KAFKA_BROKERS: '',
        // Its workers sit on downloads the holding server never answers: no grace at the stop,
        // which is not measured (the default 30 s was most of a short run).
        SHUTDOWN_GRACE_MS: '0',
      },
      'ingress.listening',
    );
  const brokers = process.env['TEST_KAFKA_BROKERS'];
  if (!brokers)
    throw new Error('kafka mode needs TEST_KAFKA_BROKERS (source the test-services env)');
  return startProcess(
    'ingress (Kafka)',
    ['services/ingress/main.ts'],
    {
      API_KEYS: `${KEY}:bench`,
      ...UNLIMITED,
      KAFKA_BROKERS: brokers,
      KAFKA_TOPIC_PREFIX: `bench-${randomUUID().slice(0, 8)}.`,
      CREDENTIALS_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      ALLOW_PRIVATE_NETWORKS: 'true',
      SCHEMA_REGISTRY_URL: '',
    },
    'ingress.listening',
  );
}

/** The floor beside the service (durable-floor.ts): the bare app plus the durable write alone. */
async function startFloor(mode: string, dataDir: string): Promise<Target> {
  const bus =
    mode === 'embedded'
      ? { DATA_DIR: join(dataDir, 'floor'), KAFKA_BROKERS: '' }
      : {
          KAFKA_BROKERS: process.env['TEST_KAFKA_BROKERS'] ?? '',
          KAFKA_TOPIC_PREFIX: `bench-floor-${randomUUID().slice(0, 8)}.`,
          SCHEMA_REGISTRY_URL: '',
        };
  return startProcess('floor', ['bench/durable-floor.ts'], bus, 'floor.listening');
}

async function benchMode(mode: string): Promise<string[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'media-bench-ingress-'));
  const holding = await startHoldingServer();
  const body = requestBody(`${holding.url}/input.mp4`);
  const bare = await startProcess('bare Koa', ['bench/bare-koa.ts'], {}, 'bare.listening');
  const floor = await startFloor(mode, dataDir);
  const service = await startService(mode, dataDir);
  const targets = [bare, floor, service];
  try {
    // A short warm-up of each, so that none pays for its JIT in the measured runs.
    for (const t of targets) await fire(t.url, body, { duration: 2 });
    const rates = new Map<Target, number[]>(targets.map((t) => [t, []]));
    const cpu = new Map<Target, number[]>(targets.map((t) => [t, []]));
    const machine = new Map<Target, number[]>(targets.map((t) => [t, []]));
    let refused = 0;
    for (let round = 0; round < rounds; round += 1) {
      // Each round starts with the next target, so none always runs on a warmer machine.
      const order = targets.map((_, k) => targets[(k + round) % targets.length] as Target);
      for (const t of order) {
        const cpuBefore = await cpuMs(t.child.pid);
        const machineBefore = await machineBusySeconds();
        const r = await fire(t.url, body);
        const used = (await cpuMs(t.child.pid)) - cpuBefore;
        const machineUsed = ((await machineBusySeconds()) - machineBefore) * 1000;
        rates.get(t)?.push(r['2xx'] / r.duration);
        cpu.get(t)?.push(used / r['2xx']);
        machine.get(t)?.push(machineUsed / r['2xx']);
        if (t === service) refused += r.non2xx + r.errors + r.timeouts;
      }
    }
    const rate = (t: Target): number => median(rates.get(t) ?? []);
    const cpuPer = (t: Target): number => median(cpu.get(t) ?? []);
    const machinePer = (t: Target): number => median(machine.get(t) ?? []);
    const bareRate = rate(bare);
    const serviceRate = rate(service);
    // What the whole machine may spend on a request for the ingress to reach half the bare rate.
    const budget = (availableParallelism() * 1000) / (bareRate / 2);
    const half = Math.floor(serviceRate / 2);
    const p99 = new Map<Target, number>();
    for (const t of [service, bare]) {
      const r = await fire(t.url, body, { overallRate: half });
      p99.set(t, r.latency.p99);
    }
    const list = (t: Target): string => (rates.get(t) ?? []).map((x) => x.toFixed(0)).join(', ');
    return [
      `| ${mode.padEnd(8)} | ${bareRate.toFixed(0).padStart(10)} | ${rate(floor).toFixed(0).padStart(7)} | ${(rate(floor) / bareRate).toFixed(2).padStart(11)} | ${serviceRate.toFixed(0).padStart(9)} | ${(serviceRate / bareRate).toFixed(2).padStart(5)} | ${String(half).padStart(9)} | ${(p99.get(service) ?? NaN).toFixed(1).padStart(16)} | ${(p99.get(bare) ?? NaN).toFixed(1).padStart(13)} | ${String(refused).padStart(7)} |`,
      `  ${mode} rounds (req/s): bare ${list(bare)}; floor ${list(floor)}; ingress ${list(service)}`,
      `  ${mode} CPU per accepted request (ms, median): bare ${cpuPer(bare).toFixed(3)}, floor ${cpuPer(floor).toFixed(3)}, ingress ${cpuPer(service).toFixed(3)}; bare / ingress ${(cpuPer(bare) / cpuPer(service)).toFixed(2)}`,
      `  ${mode} machine CPU per accepted request, every process (ms, median): bare ${machinePer(bare).toFixed(3)}, floor ${machinePer(floor).toFixed(3)}, ingress ${machinePer(service).toFixed(3)}; at most ${budget.toFixed(3)} for half the bare rate on ${availableParallelism()} cores`,
    ];
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
    holding.server.closeAllConnections();
    holding.server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const out: string[] = [];
for (const mode of modes) out.push(...(await benchMode(mode)));
console.log(
  `\n${CONNECTIONS} connections, ${seconds} s per run, ${rounds} rounds (median), each round starting with the next target\n`,
);
console.log(
  '| mode     | bare Koa/s | floor/s | floor ratio | ingress/s | ratio | half rate | ingress p99 (ms) | bare p99 (ms) | non-2xx |',
);
console.log(
  '| -------- | ---------- | ------- | ----------- | --------- | ----- | --------- | ---------------- | ------------- | ------- |',
);
for (const line of out.filter((l) => l.startsWith('|'))) console.log(line);
for (const line of out.filter((l) => !l.startsWith('|'))) console.log(line);
