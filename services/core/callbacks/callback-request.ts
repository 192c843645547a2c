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
 * The record that makes a callback's first attempt (due at once). `firstAttemptAt` is left out:
 * the retry horizon starts when the notifier first tries, not when the record was queued.
 */
export function firstDeliveryRecord(
  codec: EventCodec,
  request: CallbackRequest,
  job: { jobId: string; orgId: string },
): OutgoingRecord {
  const data: CallbackDelivery = {
    webhookId: request.webhookId,
    jobId: job.jobId,
    orgId: job.orgId,
    url: request.url,
    body: request.body,
    attempt: 1,
  };
  return codec.encode(topics.callbacks, 'media.callback.delivery', data);
}
