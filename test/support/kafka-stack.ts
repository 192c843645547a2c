import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { longClip, serveClips } from './clip-server.ts';
import type { TestServer } from './file-server.ts';
import type { ClipOptions } from './generate-clip.ts';
import { transcodeBody } from './job-requests.ts';
import { freePort, spawnService, type SpawnedService, type SpawnOptions } from './spawn-service.ts';

export const STACK_KEY = 'kafka-stack-key-0123456789';

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value)
    throw new Error(
      `${name} is not set: run the whole suite with \`npm test\`, which starts the real test services`,
    );
  return value;
}

const main = (service: string): string =>
  new URL(`../../services/${service}/main.ts`, import.meta.url).pathname;

/** The four services as separate processes on the real broker, with topics of their own. */
export interface KafkaStack {
  prefix: string;
  env: Record<string, string>;
  ingresses: { url: string; process: SpawnedService }[];
  workers: Record<'transcoder' | 'summarizer' | 'streamer' | 'notifier', SpawnedService[]>;
  start(
    service: 'transcoder' | 'summarizer' | 'streamer' | 'notifier',
    options?: SpawnOptions,
  ): Promise<SpawnedService>;
  submit(
    path: string,
    body: Record<string, unknown>,
    ingress?: number,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown>; ms: number }>;
  status(id: string, ingress?: number): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function startKafkaStack(
  options: {
    ingresses?: number;
    transcoders?: number;
    summarizers?: number;
    streamers?: number;
    notifiers?: number;
    extraEnv?: Record<string, string>;
  } = {},
): Promise<KafkaStack> {
  const prefix = `t${randomUUID().slice(0, 8)}.`;
  const dataDir = await mkdtemp(join(tmpdir(), 'media-kafka-stack-'));
  const env = stackEnv(prefix, dataDir, options.extraEnv);
  const all: SpawnedService[] = [];
  const workers: KafkaStack['workers'] = {
    transcoder: [],
    summarizer: [],
    streamer: [],
    notifier: [],
  };
  const start = async (
    service: 'transcoder' | 'summarizer' | 'streamer' | 'notifier',
    spawnOptions: SpawnOptions = {},
  ): Promise<SpawnedService> => {
    const p = spawnService(main(service), env, spawnOptions);
    all.push(p);
    workers[service].push(p);
    await p.waitForLog((r) => r['msg'] === `${service}.started`, 60_000);
    return p;
  };
  const ingresses: KafkaStack['ingresses'] = [];
  try {
    for (let i = 0; i < (options.ingresses ?? 1); i++) {
      const port = await freePort();
      const p = spawnService(main('ingress'), { ...env, PORT: String(port) });
      all.push(p);
      await p.waitForLog((r) => r['msg'] === 'ingress.listening', 60_000);
      ingresses.push({ url: `http://127.0.0.1:${port}`, process: p });
    }
    for (let i = 0; i < (options.transcoders ?? 1); i++) await start('transcoder');
    for (let i = 0; i < (options.summarizers ?? 0); i++) await start('summarizer');
    for (let i = 0; i < (options.streamers ?? 0); i++) await start('streamer');
    for (let i = 0; i < (options.notifiers ?? 1); i++) await start('notifier');
  } catch (error) {
    await Promise.all(all.map((p) => p.kill()));
    throw error;
  }
  const base = (i: number): string => {
    const ingress = ingresses[i];
    if (!ingress) throw new Error(`no ingress ${i}`);
    return ingress.url;
  };
  return {
    prefix,
    env,
    ingresses,
    workers,
    start,
    submit: (path, body, ingress = 0, headers = {}) =>
      submitTo(base(ingress) + path, body, headers),
    async status(id, ingress = 0) {
      const res = await fetch(`${base(ingress)}/jobs/${id}`, {
        headers: { 'x-api-key': STACK_KEY },
      });
      return (await res.json()) as Record<string, unknown>;
    },
    async close() {
      await Promise.all(all.map((p) => p.stop(8000)));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The environment every service of the stack runs with. */
function stackEnv(
  prefix: string,
  dataDir: string,
  extraEnv: Record<string, string> = {},
): Record<string, string> {
  return {
    KAFKA_BROKERS: requireEnv('TEST_KAFKA_BROKERS'),
    KAFKA_TOPIC_PREFIX: prefix,
    KAFKA_PARTITIONS: '4',
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    API_KEYS: `${STACK_KEY}:org-k`,
    // A notifier on its own refuses to start without a signing secret.
    WEBHOOK_SECRETS: `org-k:whsec_${randomBytes(32).toString('base64')}`,
    CREDENTIALS_KEYS: `k1:${randomBytes(32).toString('base64')}`,
    ALLOW_PRIVATE_NETWORKS: 'true',
    METRICS_PORT: '0',
    DATA_DIR: dataDir,
    RETRY_BACKOFF_MS: '200',
    CALLBACK_BACKOFF_MS: '100',
    SHUTDOWN_GRACE_MS: '3000',
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
}

/** POSTs `body` with the stack's API key; the answer and how long it took. */
async function submitTo(
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ apiKey: STACK_KEY, ...body }),
    signal: AbortSignal.timeout(30_000),
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    ms: performance.now() - started,
  };
}

/** Polls until `check` is true, or fails with `what`. */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Submits an h264 transcode of the file server's `long.mp4` (`more` adds fields) and waits until
 * it is under way (past 5 %); answers the submission's status and the job's id.
 */
export async function transcodeUnderWay(
  stack: KafkaStack,
  files: TestServer,
  more: Record<string, unknown> = {},
): Promise<{ status: number; id: string }> {
  const submitted = await stack.submit(
    '/transcode',
    transcodeBody(files, 'long.mp4', 'out.mp4', more),
  );
  const id = String(submitted.body['id']);
  await eventually(
    async () => Number((await stack.status(id))['progressPercent'] ?? 0) > 5,
    90_000,
    'the transcode to be under way',
  );
  return { status: submitted.status, id };
}

/**
 * A file server holding these generated clips (see `serveClips`) beside a stack on the test
 * broker; the server is closed again when the stack does not start.
 */
export async function startStackWithClips(
  clips: Record<string, ClipOptions>,
  stackOptions: Parameters<typeof startKafkaStack>[0] = {},
): Promise<{ files: TestServer; stack: KafkaStack }> {
  const files = await serveClips(clips);
  try {
    return { files, stack: await startKafkaStack(stackOptions) };
  } catch (error) {
    await files.close();
    throw error;
  }
}

/**
 * Mocha hooks for a suite that runs workers on the test broker against a file server holding a
 * noisy 720p clip (`long.mp4`, long enough to be mid-encode when a test acts on its worker).
 * The stack and server are read through the returned getters once `before` has run.
 */
export function useStackWithLongClip(
  stackOptions: Parameters<typeof startKafkaStack>[0],
  seconds = 30,
): { files: () => TestServer; stack: () => KafkaStack } {
  let files: TestServer | undefined;
  let stack: KafkaStack | undefined;
  before(async () => {
    requireEnv('TEST_KAFKA_BROKERS');
    ({ files, stack } = await startStackWithClips({ 'long.mp4': longClip(seconds) }, stackOptions));
  });
  after(async () => {
    await stack?.close();
    await files?.close();
  });
  const need = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the stack is made in before()');
    return value;
  };
  return { files: () => need(files), stack: () => need(stack) };
}
