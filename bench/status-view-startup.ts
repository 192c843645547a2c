// Start-up of an ingress over a long history, on the real broker: how long until GET /jobs/:id
// answers for the newest job, how many records the start read, and the process's memory.
// The history (fresh topics under a new prefix) is produced fast, in batches: per job its
// request, the events of its run (processing, progress ticks, succeeded, callback delivered)
// and its status records as the status writer leaves them (queued, then succeeded with its
// callback); the writer group's offsets are then set to the end, as a writer that kept up
// would have left them. The ingress runs as its own process (services/ingress/main.ts).
// Usage: KAFKA_BROKERS=host:port npm run bench:status-view -- [jobs=1000000] [progressTicks=2]
// With STATUS_BENCH_KEEP=1 the history is kept, and its prefix printed; STATUS_BENCH_PREFIX=<it>
// then measures another start over the same history without producing it again.
// STATUS_BENCH_COMPACTED=1 writes only each job's final status record, as the log cleaner leaves
// the status topic, so that a start reading the newest N records holds N jobs (without it, two
// records a job: a not yet compacted topic). STATUS_BENCH_COMPARE=<root of another checkout>
// also starts that checkout's ingress over the same history, alternating with this one's for
// STATUS_BENCH_ROUNDS rounds (default 1), and prints both side by side.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs, { type Message } from 'kafkajs';
import { topics } from '../services/core/bus/event-bus.ts';
import { COMPACTED_CONFIG } from '../services/core/bus/kafka-topics.ts';
import { STATUS_WRITER_GROUP } from '../services/core/status/job-status-writer.ts';
import { freePort, spawnService } from '../test/support/spawn-service.ts';
import { cpuSeconds, memoryMiB } from './proc.ts';

const { Kafka, logLevel, CompressionTypes } = kafkajs;
const jobs = Number(process.argv[2] ?? 1_000_000);
const ticks = Number(process.argv[3] ?? 2);
const brokers = (process.env['KAFKA_BROKERS'] ?? process.env['TEST_KAFKA_BROKERS'] ?? '').split(
  ',',
);
if (!brokers[0]) throw new Error('set KAFKA_BROKERS (or TEST_KAFKA_BROKERS)');
const reuse = process.env['STATUS_BENCH_PREFIX'];
const prefix = reuse ?? `bench-${randomUUID().slice(0, 8)}.`;
const idsFile = join(tmpdir(), `status-bench-${prefix}json`);
const KEY = 'bench-status-key-0123456789';
const ORG = 'org-bench';
const PARTITIONS = 6;
const compacted = process.env['STATUS_BENCH_COMPACTED'] === '1';
const compare = process.env['STATUS_BENCH_COMPARE'];
const rounds = Number(process.env['STATUS_BENCH_ROUNDS'] ?? 1);

const kafka = new Kafka({ clientId: 'bench-status', brokers, logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const ids: string[] = reuse ? (JSON.parse(await readFile(idsFile, 'utf8')) as string[]) : [];
if (!reuse) await produceHistory();

async function produceHistory(): Promise<void> {
  await createTopics();
  const { records, produceSeconds } = await sendHistory();
  await markWriterCaughtUp();
  console.log(
    `history: ${jobs} jobs, ${records} records (${ticks} progress ticks a job, ${compacted ? 'one status record a job, as compacted' : 'two status records a job'}) produced in ${produceSeconds.toFixed(1)} s`,
  );
  await writeFile(idsFile, JSON.stringify(ids));
}

async function createTopics(): Promise<void> {
  await admin.createTopics({
    waitForLeaders: true,
    topics: Object.values(topics).map((t) => ({
      topic: prefix + t,
      numPartitions: PARTITIONS,
      replicationFactor: 1,
      ...(t === topics.jobStatus ? { configEntries: COMPACTED_CONFIG } : {}),
    })),
  });
}

/**
 * Produces the history of every job, keeping the ids of the first and the 10 newest in `ids`;
 * returns the number of records and the seconds spent producing them. Batches of 500 jobs, a
 * few sends in flight, acks from the leader only (the history's durability is not what is
 * measured).
 */
async function sendHistory(): Promise<{ records: number; produceSeconds: number }> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const produceStarted = performance.now();
  let records = 0;
  const BATCH = 500;
  const inFlight = new Set<Promise<unknown>>();
  for (let from = 0; from < jobs; from += BATCH) {
    const byTopic = new Map<string, Message[]>();
    for (let i = from; i < Math.min(jobs, from + BATCH); i++) {
      const id = randomUUID();
      if (i === 0 || i >= jobs - 10) ids.push(id);
      for (const [topic, messages] of Object.entries(historyOf(id))) {
        const list = byTopic.get(topic) ?? [];
        list.push(...messages);
        byTopic.set(topic, list);
        records += messages.length;
      }
    }
    const sent = producer.sendBatch({
      acks: 1,
      compression: CompressionTypes.None,
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic: prefix + topic, messages })),
    });
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
    if (inFlight.size >= 8) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await producer.disconnect();
  return { records, produceSeconds: (performance.now() - produceStarted) / 1000 };
}

/** Sets the status writer group's offsets to the end, as a writer that kept up leaves them. */
async function markWriterCaughtUp(): Promise<void> {
  for (const t of [topics.transcodeRequests, topics.summaryRequests, topics.jobEvents])
    await admin.setOffsets({
      groupId: STATUS_WRITER_GROUP,
      topic: prefix + t,
      partitions: (await admin.fetchTopicOffsets(prefix + t)).map((p) => ({
        partition: p.partition,
        offset: p.high,
      })),
    });
}

/** What every record of one job's history repeats. */
interface Job {
  jobId: string;
  now: string;
  who: { jobId: string; kind: string; orgId: string; attempt: number };
  callbacks: { successUrl: string };
  result: Record<string, unknown> & { outputUrl: string };
  webhookId: string;
}

/** Every record of one job, by topic. */
function historyOf(jobId: string): Record<string, Message[]> {
  const job: Job = {
    jobId,
    now: new Date().toISOString(),
    who: { jobId, kind: 'transcode', orgId: ORG, attempt: 1 },
    callbacks: { successUrl: 'https://hooks.example.com/done' },
    result: {
      outputUrl: `https://media.example.com/out/${jobId}.mp4`,
      format: 'mp4',
      width: 640,
      height: 360,
      durationSeconds: 10,
      sizeBytes: 1_250_000,
      videoCodec: 'h264',
    },
    webhookId: `${jobId}:media.job.succeeded:1`,
  };
  return {
    [topics.transcodeRequests]: [requestOf(job)],
    [topics.jobEvents]: runEventsOf(job),
    [topics.jobStatus]: statusRecordsOf(job),
  };
}

// Declared, not const: the history is produced at the top of the module, before a const
// below it would be initialised.
/** One of the job's events, as a CloudEvent in structured mode. */
function eventOf(job: Job, type: string, data: Record<string, unknown>, id?: string): Message {
  const value = {
    specversion: '1.0',
    id: id ?? randomUUID(),
    type,
    source: 'bench',
    time: new Date().toISOString(),
    subject: data['jobId'],
    datacontenttype: 'application/json',
    data,
  };
  return {
    key: job.jobId,
    value: Buffer.from(JSON.stringify(value)),
    headers: { 'content-type': 'application/cloudevents+json; charset=utf-8', 'ce-type': type },
  };
}

/** The job's request, its event id the job's id. */
function requestOf(job: Job): Message {
  const { who, now, result, callbacks } = job;
  const request = {
    ...who,
    submittedAt: now,
    input: { url: 'https://media.example.com/in.mp4' },
    output: { url: result.outputUrl },
    callbacks,
    transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
  };
  return eventOf(job, 'media.job.requested', request, job.jobId);
}

/** The events of its run: processing, the progress ticks, succeeded, callback delivered. */
function runEventsOf(job: Job): Message[] {
  const { jobId, who, now, callbacks, result, webhookId } = job;
  const event = (type: string, data: Record<string, unknown>): Message => eventOf(job, type, data);
  return [
    event('media.job.processing', { ...who, startedAt: now }),
    ...Array.from({ length: ticks }, (_, i) =>
      event('media.job.progress', {
        ...who,
        percent: ((i + 1) * 100) / (ticks + 1),
        stage: 'encode',
      }),
    ),
    event('media.job.succeeded', { ...who, finishedAt: now, callbacks, result }),
    event('media.callback.status', {
      jobId,
      orgId: ORG,
      webhookId,
      state: 'delivered',
      attempts: 1,
      lastStatus: 200,
      at: now,
    }),
  ];
}

/** Its status records as the writer leaves them: queued (unless compacted), then succeeded. */
function statusRecordsOf(job: Job): Message[] {
  const { jobId, now, callbacks, result, webhookId } = job;
  const base = { id: jobId, orgId: ORG, type: 'transcode', createdAt: now, attempt: 1 };
  const finalCallback = {
    url: callbacks.successUrl,
    webhookId,
    body: {
      eventId: webhookId,
      jobId,
      kind: 'transcode',
      status: 'succeeded',
      attempt: 1,
      finishedAt: now,
      result,
    },
  };
  const status = (s: Record<string, unknown>, rev: number): Message => ({
    key: jobId,
    value: Buffer.from(JSON.stringify({ ...base, updatedAt: now, rev, ...s })),
  });
  return [
    ...(compacted ? [] : [status({ status: 'queued' }, 1)]),
    status(
      {
        status: 'succeeded',
        progressPercent: 100,
        result,
        finalCallback,
        callback: { state: 'delivered', webhookId, attempts: 1, lastStatus: 200 },
      },
      2,
    ),
  ];
}

interface Start {
  servedSeconds: number;
  /** CPU time (user + system) the ingress process had used when it first answered. */
  cpuSeconds: number;
  loaded: unknown;
  found: number;
  oldest: number;
  rss: number;
  peak: number;
  /** RSS 15 s later, the ingress idle meanwhile (V8 gives back pages after a while). */
  settled: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

/** Starts the ingress of the checkout at `root` over the history and measures it. */
async function measureStart(root: string): Promise<Start> {
  const port = await freePort();
  const metricsPort = await freePort();
  const started = performance.now();
  const ingress = spawnService(join(root, 'services/ingress/main.ts'), {
    KAFKA_BROKERS: brokers.join(','),
    KAFKA_TOPIC_PREFIX: prefix,
    API_KEYS: `${KEY}:${ORG}`,
    CREDENTIALS_KEYS: `k1:${randomBytes(32).toString('base64')}`,
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    LOG_LEVEL: 'info',
  });
  try {
    const newest = ids[ids.length - 1] ?? '';
    const get = async (id: string): Promise<number> =>
      fetch(`http://127.0.0.1:${port}/jobs/${id}`, { headers: { 'x-api-key': KEY } }).then(
        (r) => r.status,
        () => 0,
      );
    let servedSeconds = NaN;
    for (;;) {
      if ((await get(newest)) === 200) {
        servedSeconds = (performance.now() - started) / 1000;
        break;
      }
      if (performance.now() - started > 300_000) throw new Error('no answer within 300 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const cpu = await cpuSeconds(ingress.child.pid);
    const found = (await Promise.all(ids.slice(1).map(get))).filter((s) => s === 200).length;
    const oldest = await get(ids[0] ?? '');
    const loaded = ingress.logs.find((l) => l['msg'] === 'job_status.loaded')?.['jobs'];
    await new Promise((r) => setTimeout(r, 2000));
    const { rss, peak } = await memoryMiB(ingress.child.pid);
    // METRICS_PORT since /metrics left the API port; a checkout from before serves it there.
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
      .then((r) => (r.ok ? r : fetch(`http://127.0.0.1:${port}/metrics`)))
      .catch(() => fetch(`http://127.0.0.1:${port}/metrics`))
      .then((r) => r.text());
    const metric = (name: string): number =>
      Number(
        new RegExp(`^\\w*${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(metrics)?.[1] ?? NaN,
      ) /
      2 ** 20;
    await new Promise((r) => setTimeout(r, 15_000));
    const settled = (await memoryMiB(ingress.child.pid)).rss;
    return {
      servedSeconds,
      cpuSeconds: cpu,
      loaded,
      found,
      oldest,
      rss,
      peak,
      settled,
      heapUsed: metric('nodejs_heap_size_used_bytes'),
      heapTotal: metric('nodejs_heap_size_total_bytes'),
      external: metric('nodejs_external_memory_bytes'),
    };
  } finally {
    await ingress.stop();
  }
}

const here = new URL('..', import.meta.url).pathname;
const roots = compare ? [here, compare] : [here];
const results = new Map<string, Start[]>(roots.map((r) => [r, []]));
for (let round = 0; round < rounds; round++)
  for (const root of round % 2 === 0 ? roots : [...roots].reverse())
    results.get(root)?.push(await measureStart(root));

for (const [root, starts] of results)
  for (const s of starts)
    console.log(
      [
        ...(compare ? [`ingress of ${root}:`] : []),
        `GET /jobs/:id of the newest job answered 200 ${s.servedSeconds.toFixed(1)} s after the ingress process was started (${s.cpuSeconds.toFixed(1)} s of CPU by then)`,
        `jobs loaded into the view: ${String(s.loaded)}; the 10 newest found: ${s.found}/${ids.length - 1}; the oldest answers ${s.oldest}`,
        `ingress memory: RSS ${s.rss.toFixed(0)} MB, peak RSS ${s.peak.toFixed(0)} MB, RSS 15 s later ${s.settled.toFixed(0)} MB; V8 heap used ${s.heapUsed.toFixed(0)} MB of ${s.heapTotal.toFixed(0)} MB, external ${s.external.toFixed(0)} MB`,
        `goals: served within 30 s ${s.servedSeconds <= 30 ? 'met' : 'NOT met'}; peak RSS under 300 MB ${s.peak < 300 ? 'met' : 'NOT met'}`,
      ].join('\n'),
    );
if (process.env['STATUS_BENCH_KEEP'] === '1')
  console.log(`history kept: STATUS_BENCH_PREFIX=${prefix} measures another start over it`);
else
  await admin
    .deleteTopics({ topics: Object.values(topics).map((t) => prefix + t) })
    .catch(() => undefined);
await admin.disconnect();
