import { topics, type BusRecord, type EventBus } from '../bus/event-bus.ts';
import type { DEAD_LETTER_REASONS, Metrics } from '../observability/metrics.ts';

/** Why a record was dead-lettered; low cardinality, used as a metric label. */
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/**
 * Moves a record that can never succeed to the dead-letter topic, with the reason and the
 * original bytes, so that the consumer can go on. Never retried.
 */
export async function deadLetter(
  deps: { bus: EventBus; metrics: Metrics },
  record: Pick<BusRecord, 'topic' | 'key' | 'value'>,
  reason: DeadLetterReason,
  detail: string,
): Promise<void> {
  const body = {
    reason,
    detail,
    sourceTopic: record.topic,
    key: record.key,
    deadLetteredAt: new Date().toISOString(),
    valueBase64: record.value.toString('base64'),
  };
  await deps.bus.publish([
    {
      topic: topics.deadLetter,
      key: record.key || 'unkeyed',
      value: Buffer.from(JSON.stringify(body)),
      headers: { 'dlq-reason': reason, 'dlq-source-topic': record.topic },
    },
  ]);
  deps.metrics.eventsDeadLettered.inc({ reason });
}
