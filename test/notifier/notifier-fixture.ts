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
import { createGuardedHttp } from '../../services/core/net/guarded-http.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
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
): Promise<Subscription> {
  const deps = {
    bus,
    codec,
    http: createGuardedHttp({ allowPrivateNetworks: true }),
    log,
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
