// A burst of small transcode jobs, many more than the cores: does every job reach a terminal
// state with exactly one callback, and do the workers keep the CPU busy meanwhile? The inputs
// are small generated clips on a local file server, which also records the callbacks.
// Modes: all-in-one (in this process, embedded bus) and kafka (the four services as separate
// processes on the real broker: one ingress, transcoder, summarizer and notifier each).
// Settings are the defaults, apart from the per-key and per-organisation caps (below) and
// WORKER_CONCURRENCY when the environment sets it.
// CPU utilisation, two ways over the same interval (first submission to last callback):
// - the machine's, per core and in all, from /proc/stat (busy = all but idle and iowait): what
//   "the workers keep the CPU busy" asks, but other processes on the machine count too;
// - the service processes' and their ffmpeg children's CPU time / (wall time × cores), from
//   /proc/<pid>/stat (utime + stime + cutime + cstime; a reaped child counts): the bench's own.
// Exits non-zero when a job does not reach a terminal state, has no callback or has two.
// Usage: npm run bench:backlog -- [jobs=1000] [modes=all-in-one,kafka]   (kafka: KAFKA_BROKERS or TEST_KAFKA_BROKERS)
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestAllInOne } from '../test/support/in-process-service.ts';
import { startTestServer, type TestServer } from '../test/support/file-server.ts';
import { judgeBurst } from '../test/support/burst-verdict.ts';
import { generateClip } from '../test/support/generate-clip.ts';
import { STACK_KEY, startKafkaStack } from '../test/support/kafka-stack.ts';

const jobs = Number(process.argv[2] ?? 1000);
const modes = (process.argv[3] ?? 'all-in-one,kafka').split(',');
const KEY = 'bench-backlog-key-0123456789';
const TICKS = 100; // USER_HZ on Linux
const cores = availableParallelism();
// One key sends the whole burst: the per-key rate and per-organisation caps would answer 429.
// WORKER_CONCURRENCY from the environment, if set, goes to the workers (to compare with one slot).
const NO_CAPS: Record<string, string> = {
  RATE_LIMIT_PER_SECOND: '0',
  MAX_ACTIVE_JOBS_PER_ORG: '0',
  ...(process.env['WORKER_CONCURRENCY']
    ? { WORKER_CONCURRENCY: process.env['WORKER_CONCURRENCY'] }
    : {}),
};

const files = await startTestServer();
await generateClip(join(files.dir, 'input.mp4'), { seconds: 2, width: 320, height: 240 });

async function cpuSeconds(pids: readonly number[]): Promise<number> {
  let ticks = 0;
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime are fields 14-17 of stat, 12-15 after the name.
    for (const i of [11, 12, 13, 14]) ticks += Number(fields[i] ?? 0);
  }
  return ticks / TICKS;
}

/** Per CPU line of /proc/stat ("cpu", "cpu0", …): busy and total ticks so far. */
async function machineTicks(): Promise<Map<string, { busy: number; total: number }>> {
  const ticks = new Map<string, { busy: number; total: number }>();
  for (const line of (await readFile('/proc/stat', 'utf8')).split('\n')) {
    if (!line.startsWith('cpu')) continue;
    const [name = '', ...rest] = line.trim().split(/\s+/);
    // user nice system idle iowait irq softirq steal (guest time is inside user already).
    const n = rest.slice(0, 8).map(Number);
    const total = n.reduce((a, b) => a + b, 0);
    ticks.set(name, { busy: total - (n[3] ?? 0) - (n[4] ?? 0), total });
  }
  return ticks;
}

/** "cpu 93 % (cpu0 92 %, cpu1 94 %)" between two readings of /proc/stat. */
function machineUse(
  before: Map<string, { busy: number; total: number }>,
  after: Map<string, { busy: number; total: number }>,
): { all: number; text: string } {
  const use = (name: string): number => {
    const a = before.get(name);
    const b = after.get(name);
    if (!a || !b || b.total === a.total) return 0;
    return (b.busy - a.busy) / (b.total - a.total);
  };
  const cores = [...after.keys()].filter((k) => k !== 'cpu');
  const pct = (x: number): string => `${(x * 100).toFixed(0)} %`;
  return {
    all: use('cpu'),
    text: `${pct(use('cpu'))} (${cores.map((c) => `${c} ${pct(use(c))}`).join(', ')})`,
  };
}

interface Target {
  submit(body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }>;
  status(id: string): Promise<Record<string, unknown>>;
  pids: number[];
  close(): Promise<void>;
}

async function allInOne(): Promise<Target> {
  const dataDir = await mkdtemp(join(tmpdir(), 'media-backlog-'));
  const app = await startTestAllInOne(dataDir, {
    API_KEYS: `${KEY}:bench`,
    ...NO_CAPS,
  });
  return {
    submit: (body) => post(app.ingress.url, { apiKey: KEY, ...body }),
    status: (id) => get(app.ingress.url, id, KEY),
    pids: [process.pid],
    close: async () => {
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function onKafka(): Promise<Target> {
  process.env['TEST_KAFKA_BROKERS'] ??= process.env['KAFKA_BROKERS'];
  const stack = await startKafkaStack({
    ingresses: 1,
    transcoders: 1,
    summarizers: 1,
    notifiers: 1,
    extraEnv: NO_CAPS,
  });
  const url = stack.ingresses[0]?.url ?? '';
  return {
    submit: (body) => post(url, { apiKey: STACK_KEY, ...body }),
    status: (id) => get(url, id, STACK_KEY),
    pids: [
      ...stack.ingresses.map((i) => i.process.child.pid ?? 0),
      ...Object.values(stack.workers).flatMap((ps) => ps.map((p) => p.child.pid ?? 0)),
    ],
    close: () => stack.close(),
  };
}

async function post(base: string, body: Record<string, unknown>) {
  const res = await fetch(`${base}/transcode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function get(base: string, id: string, key: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}/jobs/${id}`, { headers: { 'x-api-key': key } });
  return (await res.json()) as Record<string, unknown>;
}

/** Whether every job reached a terminal state with exactly one callback. */
async function run(mode: string, target: Target, server: TestServer): Promise<boolean> {
  const before = server.callbacks.length;
  const cpu0 = await cpuSeconds(target.pids);
  const machine0 = await machineTicks();
  const load0 = (await readFile('/proc/loadavg', 'utf8')).split(' ')[0];
  const started = performance.now();
  const ids: string[] = [];
  // The burst: 50 submissions in flight at a time.
  for (let i = 0; i < jobs; i += 50) {
    const acks = await Promise.all(
      Array.from({ length: Math.min(50, jobs - i) }, (_, j) =>
        target.submit({
          inputUrl: `${server.url}/files/input.mp4`,
          outputUrl: `${server.url}/files/out-${mode}-${i + j}.mp4`,
          encoder: 'h264',
          container: 'mp4',
          bitrateKbps: '1000',
          successUrl: `${server.url}/callbacks/${mode}`,
          failureUrl: `${server.url}/callbacks/${mode}`,
        }),
      ),
    );
    for (const ack of acks) {
      if (ack.status !== 200) throw new Error(`submission refused: ${JSON.stringify(ack.body)}`);
      ids.push(String(ack.body['id']));
    }
  }
  const submitted = (performance.now() - started) / 1000;
  const wanted = new Set(ids);
  const seen = (): number =>
    new Set(
      server.callbacks
        .slice(before)
        .map((c) => String(c.body['jobId']))
        .filter((id) => wanted.has(id)),
    ).size;
  // When each quarter of the jobs had called back: a drain that slows as the backlog grows shows.
  const quarters: number[] = [];
  const deadline = Date.now() + 3600_000;
  for (let n = seen(); n < ids.length && Date.now() < deadline; n = seen()) {
    while (quarters.length < 4 && n >= (ids.length * (quarters.length + 1)) / 4)
      quarters.push((performance.now() - started) / 1000);
    await new Promise((r) => setTimeout(r, 250));
  }
  const wall = (performance.now() - started) / 1000;
  while (quarters.length < 4) quarters.push(wall);
  const cpu = (await cpuSeconds(target.pids)) - cpu0;
  const machine = machineUse(machine0, await machineTicks());
  const load1 = (await readFile('/proc/loadavg', 'utf8')).split(' ')[0];
  // Late duplicates would come within a few seconds of the last callback.
  await new Promise((r) => setTimeout(r, 5000));
  const statuses: Record<string, unknown>[] = [];
  for (let i = 0; i < ids.length; i += 100)
    statuses.push(...(await Promise.all(ids.slice(i, i + 100).map((id) => target.status(id)))));
  const v = judgeBurst(ids, statuses, server.callbacks.slice(before));
  const quarterText = quarters.map((t) => `${t.toFixed(1)} s`).join(', ');
  console.log(
    [
      `${mode} (WORKER_CONCURRENCY ${NO_CAPS['WORKER_CONCURRENCY'] ?? 'default'}): ${jobs} jobs submitted in ${submitted.toFixed(1)} s, all done in ${wall.toFixed(1)} s: ${((jobs / wall) * 60).toFixed(0)} jobs/min`,
      `  a quarter, half, three quarters, all of the callbacks in: ${quarterText}; drained ${(wall - submitted).toFixed(1)} s after the last acknowledgement`,
      `  terminal ${v.terminal}/${jobs} (failed ${v.notSucceeded}); with a callback ${v.calledBack}/${jobs}; more than one callback: ${v.duplicates}`,
      `  machine CPU while draining (/proc/stat): ${machine.text}; load average ${load0} at the start, ${load1} at the end`,
      `  CPU of the service processes and their ffmpeg children: ${cpu.toFixed(0)} s over ${wall.toFixed(0)} s on ${cores} cores = ${((cpu / (wall * cores)) * 100).toFixed(0)} % utilisation`,
    ].join('\n'),
  );
  if (!v.ok)
    console.error(
      `FAILED (${mode}): ${jobs - v.terminal} jobs not terminal, ${jobs - v.calledBack} without a callback, ${v.duplicates} with more than one`,
    );
  return v.ok;
}

let allOk = true;
for (const mode of modes) {
  const target = mode === 'kafka' ? await onKafka() : await allInOne();
  try {
    allOk = (await run(mode, target, files)) && allOk;
  } finally {
    await target.close();
  }
}
await files.close();
if (!allOk) process.exitCode = 1;
