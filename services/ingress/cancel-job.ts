import type { Context } from 'koa';
import { BusUnavailableError, type EventBus } from '../core/bus/event-bus.ts';
import type { JobCancel } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import type { EventCodec } from '../core/events/event-codec.ts';
import { cancelRecord } from '../core/status/job-cancels.ts';
import type { JobStatusView } from '../core/status/job-status-view.ts';
import type { Logger } from '../core/observability/logger.ts';
import type { Clock } from '../core/time.ts';
import type { JobAccess } from './authenticate.ts';

/**
 * POST /jobs/:id/cancel for an authorised caller: puts the cancel on the bus, where every worker
 * and the notifier read it (job-cancels.ts), and answers 202. On a job that has ended, it stops
 * the retries of its callback (one that failed and is retrying; else 409 job_finished). The job's outcome is published by the worker, as
 * every outcome is: `canceled` once it acts on the cancel. A repeated cancel is answered the
 * same without publishing again.
 */
export async function cancelJob(
  ctx: Context,
  deps: { bus: EventBus; codec: EventCodec; statusView: JobStatusView; log: Logger; clock: Clock },
  who: JobAccess,
): Promise<void> {
  const { orgId, id } = who;
  const status = who.known ? deps.statusView.get(id, orgId) : undefined;
  if (!status) throw new MediaError('not_found', `no job ${who.asked} for this API key`);
  const active = status.status === 'queued' || status.status === 'processing';
  // An ended job whose callback failed and waits for its next try: the cancel stops the tries.
  const calling = status.callback?.state === 'retrying';
  if (!active && !calling)
    throw new MediaError('job_finished', `job ${id} has already ended (${status.status})`);
  let requestedAt = active ? status.cancelRequestedAt : undefined;
  if (requestedAt === undefined) {
    requestedAt = deps.clock.now().toISOString();
    const record = cancelRecord(deps.codec, {
      jobId: id,
      orgId,
      kind: status.type === 'transcode' || status.type === 'stream' ? status.type : 'summary',
      requestedAt,
    });
    try {
      await deps.bus.publish([record]);
    } catch (error) {
      if (!(error instanceof BusUnavailableError)) throw error;
      throw new MediaError(
        'bus_unavailable',
        'the cancel could not be queued because the event bus is unavailable; try again',
      );
    }
    // Read-your-writes on this copy; other copies read it from the bus.
    const decoded = deps.codec.decode(record);
    if (decoded.ok) deps.statusView.apply(decoded.event);
    deps.log.info('job.cancel_requested', { jobId: id, orgId, status: status.status });
  }
  const body: JobCancel = {
    id,
    status: status.status,
    cancelRequestedAt: requestedAt,
  };
  ctx.status = 202;
  ctx.body = body;
}
