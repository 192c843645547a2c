import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import {
  topics,
  type EventBus,
  type OutgoingRecord,
  type Subscription,
} from '../../services/core/bus/event-bus.ts';
import { loadContracts } from '../../services/core/contracts/load-contracts.ts';
import { createEventCodec, type JobEvent } from '../../services/core/events/event-codec.ts';
import {
  callbackFor,
  firstDeliveryRecord,
} from '../../services/core/callbacks/callback-request.ts';
import { createGuardedHttp } from '../../services/core/net/guarded-http.ts';
import { createLogger, silentLogger } from '../../services/core/observability/logger.ts';
import { createMetrics } from '../../services/core/observability/metrics.ts';
import { systemClock } from '../../services/core/time.ts';
import { startNotifier, type NotifierOptions } from '../../services/notifier/start-notifier.ts';

export const codec = createEventCodec(loadContracts(), 'test');
export const newMetrics = () => createMetrics(new Registry(), { defaultMetrics: false });
export const log = silentLogger;

/**
 * The notifier on `bus` with the test codec, HTTP that may reach loopback receivers, a silent
 * log, metrics of its own and the system clock; group `notifier` and no signing secret unless
 * `options` say otherwise.
 */
export function startTestNotifier(
  bus: EventBus,
  options: Omit<NotifierOptions, 'group' | 'secretFor'> & Partial<NotifierOptions>,
  logger = log,
): Promise<Subscription> {
  const deps = {
    bus,
    codec,
    http: createGuardedHttp({ allowPrivateNetworks: true }),
    log: logger,
    metrics: newMetrics(),
    clock: systemClock,
  };
  return startNotifier(deps, { group: 'notifier', secretFor: () => undefined, ...options });
}

/** A bus that only records what is published. */
export function recordingBus(): EventBus & { published: OutgoingRecord[] } {
  const published: OutgoingRecord[] = [];
  return {
    published,
    publish: async (records) => void published.push(...records),
    subscribe: async () => ({ close: async () => {} }),
    tail: async () => ({ close: async () => {} }),
    isReady: async () => true,
    close: async () => {},
  };
}

/** A terminal success event of a new job that asks for a callback to `url`. */
export function succeeded(url: string, orgId = 'org-a'): OutgoingRecord {
  const result = {
    outputUrl: 'https://files.example.com/out.mp4',
    format: 'mp4' as const,
    width: 320,
    height: 240,
    durationSeconds: 2,
    sizeBytes: 1000,
  };
  return codec.encode(topics.jobEvents, 'media.job.succeeded', {
    jobId: randomUUID(),
    kind: 'transcode',
    orgId,
    attempt: 1,
    finishedAt: new Date().toISOString(),
    callbacks: { successUrl: url },
    result,
  });
}

export function decodeAll(records: readonly OutgoingRecord[]): JobEvent[] {
  return records
    .filter((r) => r.topic !== topics.deadLetter)
    .map((r) => {
      const decoded = codec.decode(r);
      if (!decoded.ok) throw new Error(decoded.reason);
      return decoded.event;
    });
}

/**
 * The delivery record of the callback a terminal event asks for, in `chain` (the notifier's:
 * the event id; a manual redelivery's: a new random one).
 */
export function deliveryRecordOf(event: OutgoingRecord, chain: string): OutgoingRecord {
  const decoded = codec.decode(event);
  if (!decoded.ok) throw new Error(decoded.reason);
  const callback = callbackFor(decoded.event);
  if (!callback || !('orgId' in decoded.event.data)) throw new Error('no callback asked for');
  return firstDeliveryRecord(codec, callback, decoded.event.data, chain);
}

/** A log that keeps its records, parsed, and can wait for one. */
export function capturedLog() {
  const records: Record<string, unknown>[] = [];
  return {
    records,
    logger: createLogger({
      level: 'info',
      write: (line) => void records.push(JSON.parse(line) as Record<string, unknown>),
    }),
    async waitFor(match: (r: Record<string, unknown>) => boolean, ms: number, what: string) {
      const end = Date.now() + ms;
      while (!records.some(match)) {
        if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
}

interface Receiver {
  url: string;
  callbacks: readonly { body: Record<string, unknown> }[];
  waitForCallback(
    predicate: (c: { body: Record<string, unknown> }) => boolean,
    timeoutMs: number,
  ): Promise<unknown>;
}

/**
 * What a restarted notifier must do, on any bus that keeps its records (`openBus` opens the same
 * one again): a terminal event delivered before the restart, and the same event record or its
 * delivery record coming again after it, make no second callback; another event still makes
 * one; a manual redelivery (a chain of its own) is still sent. With `handOver`, the second
 * notifier joins while the first runs and takes its partitions when it stops (a rebalance).
 */
export async function onceAcrossRestart(
  openBus: () => EventBus,
  files: Receiver,
  options: Omit<NotifierOptions, 'group' | 'secretFor'>,
  { handOver = false } = {},
): Promise<void> {
  const event = succeeded(`${files.url}/callbacks/once`);
  const jobId = event.key;
  const ofJob = () => files.callbacks.filter((c) => c.body['jobId'] === jobId);
  const firstBus = openBus();
  const first = await startTestNotifier(firstBus, options);
  let firstRuns = true;
  const stopFirst = async () => {
    if (!firstRuns) return;
    firstRuns = false;
    await first.close(5000);
    await firstBus.close();
  };
  try {
    await firstBus.publish([event]);
    await files.waitForCallback((c) => c.body['jobId'] === jobId, 45_000);
  } catch (error) {
    await stopFirst();
    throw error;
  }
  if (!handOver) await stopFirst();

  const log = capturedLog();
  const bus = openBus();
  const notifier = await startTestNotifier(bus, options, log.logger);
  try {
    if (handOver) await stopFirst();
    const webhookId = `${jobId}:media.job.succeeded:1`;
    await bus.publish([event]);
    await bus.publish([deliveryRecordOf(event, webhookId)]);
    const other = succeeded(`${files.url}/callbacks/other`);
    await bus.publish([other]);
    await files.waitForCallback((c) => c.body['jobId'] === other.key, 45_000);
    const about = (msg: string) => (r: Record<string, unknown>) =>
      r['msg'] === msg && r['jobId'] === jobId;
    const skipped = (msg: string, what: string) =>
      log.waitFor(about(msg), 45_000, what).catch((error: unknown) => {
        throw new Error(`the job got ${ofJob().length} callbacks, not 1`, { cause: error });
      });
    await skipped('callback.duplicate_event', 'the event skipped');
    await skipped('callback.duplicate_attempt', 'the record skipped');
    if (ofJob().length !== 1)
      throw new Error(`${ofJob().length} callbacks of the job before the redelivery`);

    await bus.publish([deliveryRecordOf(event, randomUUID())]);
    await log.waitFor(about('callback.delivered'), 45_000, 'the redelivery sent');
    if (ofJob().length !== 2) throw new Error(`${ofJob().length} callbacks after the redelivery`);
  } finally {
    await stopFirst();
    await notifier.close(5000);
    await bus.close();
  }
}
