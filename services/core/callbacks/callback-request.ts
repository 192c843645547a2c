import { topics, type OutgoingRecord } from '../bus/event-bus.ts';
import type { CallbackDelivery } from '../contracts/types.generated.ts';
import type { EventCodec, JobEvent } from '../events/event-codec.ts';

/**
 * A job's final callback: where it goes and exactly what it says. Lives in core because both
 * the notifier (first delivery) and the ingress (manual redelivery) must build the same one.
 */
export interface CallbackRequest {
  url: string;
  /** Sent as `webhook-id` on every attempt: the terminal event's stable id, so receivers dedupe on it. */
  webhookId: string;
  /** The JSON body; payloads are documented in docs/api.md, "Callbacks". */
  body: Record<string, unknown>;
}

/** The callback a terminal event asks for, if any. */
export function callbackFor(event: JobEvent): CallbackRequest | undefined {
  if (event.type === 'media.job.succeeded') {
    const url = event.data.callbacks?.successUrl;
    if (!url) return undefined;
    const { jobId, kind, attempt, finishedAt, result } = event.data;
    return {
      url,
      webhookId: event.id,
      body: { eventId: event.id, jobId, kind, status: 'succeeded', attempt, finishedAt, result },
    };
  }
  if (event.type === 'media.job.failed') {
    const url = event.data.callbacks?.failureUrl;
    if (!url) return undefined;
    const { jobId, kind, attempt, finishedAt, error } = event.data;
    return {
      url,
      webhookId: event.id,
      body: {
        eventId: event.id,
        jobId,
        kind,
        status: 'failed',
        attempt,
        finishedAt,
        code: error.code,
        message: error.message,
      },
    };
  }
  return undefined;
}

/**
 * The id of the delivery record of `attempt` in a chain of attempts: `<chain>:callback:<attempt>`.
 * The notifier's chain is the callback's webhook-id, so the first record scheduled again for the
 * same terminal event (after a restart, or from a second producer of the event) has the same id
 * as the first and is skipped once that one is settled; a manual redelivery starts a chain of
 * its own (a random id), so it is sent.
 */
export function deliveryRecordId(chain: string, attempt: number): string {
  return `${chain}:callback:${attempt}`;
}

/**
 * The chain and attempt a delivery record id names (`deliveryRecordId`); a record of an older
 * release (a random id) is a chain of its own at attempt 0.
 */
export function parseDeliveryRecordId(id: string): { chain: string; attempt: number } {
  const match = /^(.+):callback:(\d{1,6})$/.exec(id);
  if (!match?.[1] || !match[2]) return { chain: id, attempt: 0 };
  return { chain: match[1], attempt: Number(match[2]) };
}

/**
 * The record that makes a callback's first attempt (due at once), in the chain `chain` (the
 * notifier's: the webhook-id; a manual redelivery's: a new random one). `firstAttemptAt` is left
 * out: the retry horizon starts when the notifier first tries, not when the record was queued.
 */
export function firstDeliveryRecord(
  codec: EventCodec,
  request: CallbackRequest,
  job: { jobId: string; orgId: string },
  chain: string,
): OutgoingRecord {
  const data: CallbackDelivery = {
    webhookId: request.webhookId,
    jobId: job.jobId,
    orgId: job.orgId,
    url: request.url,
    body: request.body,
    attempt: 1,
  };
  return codec.encode(
    topics.callbacks,
    'media.callback.delivery',
    data,
    deliveryRecordId(chain, 1),
  );
}
