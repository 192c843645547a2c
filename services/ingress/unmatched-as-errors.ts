import type { Context, Next } from 'koa';
import { MediaError } from '../core/errors.ts';

/**
 * The router answers a known path with another method by a bare 405 (or 501 for a method it
 * does not know) and its Allow header, and an unknown path by nothing: both become errors
 * in the contract's shape here.
 */
export async function unmatchedAsErrors(ctx: Context, next: Next): Promise<void> {
  await next();
  if (ctx.status !== 404 && ctx.status !== 405 && ctx.status !== 501) return;
  if (ctx.body !== undefined && ctx.body !== null) return;
  // Koa's typing says string; an unset header is undefined.
  const allowed = String((ctx.response.get('Allow') as string | undefined) ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter((m) => m !== '' && m !== 'HEAD');
  if (allowed.length === 0)
    throw new MediaError('not_found', `no such path: ${ctx.method} ${ctx.path}`);
  throw new MediaError(
    'method_not_allowed',
    `${ctx.method} is not allowed on ${ctx.path}; use ${allowed.join(' or ')}`,
  );
}
