import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { topics, type EventBus, type OutgoingRecord } from '../../services/core/bus/event-bus.ts';
import { loadContracts } from '../../services/core/contracts/load-contracts.ts';
import { createEventCodec, type JobEvent } from '../../services/core/events/event-codec.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createMetrics } from '../../services/core/observability/metrics.ts';

export const codec = createEventCodec(loadContracts(), 'test');
export const newMetrics = () => createMetrics(new Registry(), { defaultMetrics: false });
export const log = silentLogger;

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
