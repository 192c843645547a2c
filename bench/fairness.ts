// Fair scheduling, measured on both buses in one run (issue 12's scenario): with two slots,
// organisation A submits a batch of transcodes of a long 720p clip, and one second later
// organisation B submits one transcode of a 2-second clip. Reports B's wait against the first
// slot that freed after B arrived, and the batch's makespan against the ideal (the total work,
// measured job by job, divided by the slots).
// Usage: npm run bench:fairness -- [batchAllInOne=6] [batchKafka=16] [seconds=12] [modes=all-in-one,kafka]
// Kafka mode needs TEST_KAFKA_BROKERS (scripts/test-services/start-all.sh writes it).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../test/support/file-server.ts';
import { generateClip } from '../test/support/generate-clip.ts';
import { STACK_KEY, startKafkaStack } from '../test/support/kafka-stack.ts';
import { freePort, spawnService, type SpawnedService } from '../test/support/spawn-service.ts';

const batchAllInOne = Number(process.argv[2] ?? 6);
const batchKafka = Number(process.argv[3] ?? 16);
const seconds = Number(process.argv[4] ?? 12);
const modes = (process.argv[5] ?? 'all-in-one,kafka').split(',');
const KEY_A = STACK_KEY;
const KEY_B = 'bench-key-org-b-0123456789';
const SLOTS = 2;

interface Submit {
  (apiKey: string, name: string, input: string): Promise<{ id: string; at: number }>;
}

const files = await startTestServer();
await generateClip(join(files.dir, 'long.mp4'), { seconds, width: 1280, height: 720, noise: true });
await generateClip(join(files.dir, 'short.mp4'), {
  seconds: 2,
  width: 1280,
  height: 720,
  noise: true,
});

const body = (apiKey: string, name: string, input: string): Record<string, unknown> => ({
  apiKey,
  inputUrl: `${files.url}/files/${input}`,
  outputUrl: `${files.url}/files/out-${name}.mp4`,
  encoder: 'h264',
  container: 'mp4',
  bitrateKbps: '2000',
  width: 1280,
  successUrl: `${files.url}/callbacks/ok`,
  failureUrl: `${files.url}/callbacks/fail`,
});

const submitter =
  (base: () => string): Submit =>
  async (apiKey, name, input) => {
    const at = Date.now();
    const res = await fetch(`${base()}/transcode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body(apiKey, name, input)),
    });
    const ack = (await res.json()) as { id?: string; error?: string };
    if (!ack.id) throw new Error(`submission refused: ${ack.error ?? res.status}`);
    return { id: ack.id, at };
  };

async function scenario(
  mode: string,
  batch: number,
  submit: Submit,
  workers: () => SpawnedService[],
): Promise<void> {
  const a = await Promise.all(
    Array.from({ length: batch }, (_, i) => submit(KEY_A, `${mode}-a${i}`, 'long.mp4')),
  );
  await new Promise((r) => setTimeout(r, 1000));
  const b = await submit(KEY_B, `${mode}-b`, 'short.mp4');
  const ids = [...a.map((j) => j.id), b.id];
  const deadline = Date.now() + 3600_000;
  while (!ids.every((id) => files.callbacks.some((c) => c.body['jobId'] === id))) {
    if (Date.now() > deadline) throw new Error('jobs did not finish within an hour');
    await new Promise((r) => setTimeout(r, 500));
  }
  const times = (msg: string): Map<string, number> =>
    new Map(
      workers()
        .flatMap((w) => w.logs)
        .filter((r) => r['msg'] === msg)
        .map((r) => [String(r['jobId']), Date.parse(String(r['time']))]),
    );
  const started = times('job.started');
  const ended = times('job.succeeded');
  const at = (m: Map<string, number>, id: string): number => {
    const t = m.get(id);
    if (t === undefined) throw new Error(`no log of job ${id}`);
    return t;
  };
  // No A job ending after B arrived: a slot was already free (a batch too short to fill them).
  const later = a.map((j) => at(ended, j.id)).filter((t) => t >= b.at);
  const firstFree = later.length > 0 ? Math.min(...later) : b.at;
  const bWait = at(started, b.id) - b.at;
  const freeWait = firstFree - b.at;
  const work = ids.reduce((sum, id) => sum + at(ended, id) - at(started, id), 0);
  const makespan = Math.max(...ids.map((id) => at(ended, id))) - Math.min(...a.map((j) => j.at));
  const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  console.log(
    [
      `${mode}: ${batch} × ${seconds} s 720p from org A, then one 2 s clip from org B, ${SLOTS} slots`,
      `  org B started ${s(bWait)} after submission; first slot freed ${s(freeWait)} after it` +
        (freeWait > 0
          ? ` (B's wait ÷ first free slot = ${(bWait / freeWait).toFixed(2)})`
          : ' (a slot was free when B arrived)'),
      `  org B finished ${s(at(ended, b.id) - b.at)} after submission`,
      `  makespan ${s(makespan)}; ideal (total work ${s(work)} ÷ ${SLOTS} slots) ${s(work / SLOTS)};` +
        ` ratio ${(makespan / (work / SLOTS)).toFixed(2)}`,
    ].join('\n'),
  );
}

async function allInOne(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'media-bench-fair-'));
  const port = await freePort();
  const service = spawnService(
    new URL('../services/all-in-one/main.ts', import.meta.url).pathname,
    {
      PORT: String(port),
      API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b`,
      ALLOW_PRIVATE_NETWORKS: 'true',
      DATA_DIR: dataDir,
      WORKER_CONCURRENCY: String(SLOTS),
      TRANSFER_CONCURRENCY: '1',
      CREDENTIALS_KEYS: `k1:${randomBytes(32).toString('base64')}`,
    },
  );
  try {
    await service.waitForLog((r) => r['msg'] === 'ingress.listening', 60_000);
    await scenario(
      'all-in-one',
      batchAllInOne,
      submitter(() => `http://127.0.0.1:${port}`),
      () => [service],
    );
  } finally {
    await service.stop(10_000);
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function kafka(): Promise<void> {
  const stack = await startKafkaStack({
    transcoders: SLOTS,
    notifiers: 1,
    extraEnv: {
      API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b`,
      KAFKA_PARTITIONS: '',
      KAFKA_SESSION_TIMEOUT_MS: '',
      WORKER_CONCURRENCY: '1',
      TRANSFER_CONCURRENCY: '1',
      LOG_LEVEL: 'info',
    },
  });
  try {
    await scenario(
      'kafka',
      batchKafka,
      submitter(() => stack.ingresses[0]?.url ?? ''),
      () => [...stack.workers.transcoder],
    );
  } finally {
    await stack.close();
  }
}

try {
  if (modes.includes('all-in-one')) await allInOne();
  if (modes.includes('kafka')) await kafka();
} finally {
  await files.close();
}
