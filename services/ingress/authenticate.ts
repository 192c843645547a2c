import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { MediaError } from '../core/errors.ts';
import type { RateLimiter } from './rate-limit.ts';

/** Resolves an API key to its organisation id, undefined when unknown. */
export type Authenticator = (presented: unknown) => string | undefined;

/** A caller's access to one job: its organisation, and the job id it asked for. */
export interface JobAccess {
  orgId: string;
  /** The id asked for, lower-cased. */
  id: string;
  /** Whether `id` is a job id at all (a UUID); a job of another form is not looked up. */
  known: boolean;
  /** The id as the caller wrote it, for messages. */
  asked: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Compares in constant time: every configured key is compared (no early exit), on digests of
 * equal length, so neither timing nor length tells how close a guess was.
 */
export function createAuthenticator(apiKeys: ReadonlyMap<string, string>): Authenticator {
  const entries = [...apiKeys].map(([key, org]) => ({ digest: digest(key), org }));
  return (presented) => {
    if (typeof presented !== 'string' || presented.length === 0 || presented.length > 256)
      return undefined;
    const candidate = digest(presented);
    let found: string | undefined;
    for (const entry of entries) if (timingSafeEqual(entry.digest, candidate)) found = entry.org;
    return found;
  };
}

/**
 * The organisation of the key in `X-Api-Key` or `Authorization: Bearer`, for the requests that
 * carry no JSON body (job status, callbacks, the watermark library).
 */
export function organisationOf(ctx: Context, authenticate: Authenticator): string {
  const bearer = /^Bearer (.+)$/.exec(ctx.get('authorization'))?.[1];
  const presented = ctx.get('x-api-key') || bearer;
  if (!presented) throw new MediaError('unauthorized', 'send the API key in the X-Api-Key header');
  const orgId = authenticate(presented);
  if (!orgId) throw new MediaError('unauthorized', 'the API key is not valid');
  return orgId;
}

/**
 * The organisation of the key in X-Api-Key or `Authorization: Bearer`, with one request of the
 * key's rate spent, and the job id asked for (the `:id` of the route).
 */
export function authorizeJobRequest(
  ctx: Context,
  authenticate: Authenticator,
  limitRate: RateLimiter,
): JobAccess {
  const orgId = organisationOf(ctx, authenticate);
  const bearer = /^Bearer (.+)$/.exec(ctx.get('authorization'))?.[1];
  limitRate(ctx.get('x-api-key') || bearer || '', ctx);
  const params = ctx['params'] as Record<string, string | undefined>;
  const asked = params['id'] ?? '';
  const id = asked.toLowerCase();
  return { orgId, id, known: UUID.test(id), asked };
}
