import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { BusUnavailableError } from '../core/bus/event-bus.ts';
import { firstDeliveryRecord } from '../core/callbacks/callback-request.ts';
import type { CallbackRedelivery } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import { extractTraceContext, withTraceHeaders } from '../core/observability/tracing.ts';
import type { JobAccess } from './authenticate.ts';
import { requestIdOf } from './handle-errors.ts';
import type { IngressDeps } from './ingress-context.ts';

/**
 * POST /jobs/:id/callbacks/redeliver: queues the job's final callback again, with its
 * webhook-id; attempts count from 1 again, in a new chain of delivery records (never skipped as
 * one already delivered).
 */
export async function redeliverCallback(
  ctx: Context,
  deps: Pick<IngressDeps, 'bus' | 'codec' | 'statusView' | 'log'>,
  who: JobAccess,
): Promise<void> {
  const { orgId, id, asked } = who;
  const status = who.known ? deps.statusView.get(id, orgId) : undefined;
  if (!status) throw new MediaError('not_found', `no job ${asked} for this API key`);
  if (status.status === 'queued' || status.status === 'processing')
    throw new MediaError(
      'job_not_finished',
      `job ${id} is ${status.status}; its callback is sent when it ends`,
    );
  const callback = deps.statusView.finalCallback(id, orgId);
  if (!callback)
    throw new MediaError(
      'no_callback',
      `job ${id} has no ${status.status === 'succeeded' ? 'successUrl' : 'failureUrl'} to call`,
    );
  try {
    await deps.bus.publish([
      withTraceHeaders(
        // A chain of its own: the notifier skips only records of attempts already settled.
        firstDeliveryRecord(deps.codec, callback, { jobId: id, orgId }, randomUUID()),
        extractTraceContext(ctx.headers),
      ),
    ]);
  } catch (error) {
    if (!(error instanceof BusUnavailableError)) throw error;
    throw new MediaError(
      'bus_unavailable',
      'the callback could not be queued because the event bus is unavailable; try again',
    );
  }
  deps.log.info('callback.redelivery_queued', {
    requestId: requestIdOf(ctx),
    jobId: id,
    orgId,
    webhookId: callback.webhookId,
  });
  const body: CallbackRedelivery = { id, webhookId: callback.webhookId, state: 'pending' };
  ctx.status = 202;
  ctx.body = body;
}
