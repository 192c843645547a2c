import type { Context } from 'koa';
import { MediaError } from '../core/errors.ts';
import type { JobAccess } from './authenticate.ts';
import type { IngressDeps } from './ingress-context.ts';

/** GET /jobs/:id: the job's status, to its organisation only. */
export async function getJob(
  ctx: Context,
  deps: Pick<IngressDeps, 'statusView'>,
  who: JobAccess,
): Promise<void> {
  const { orgId, id, asked } = who;
  const status = who.known ? deps.statusView.get(id, orgId) : undefined;
  if (!status) throw new MediaError('not_found', `no job ${asked} for this API key`);
  ctx.body = status;
}
