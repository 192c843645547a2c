import type { Context } from 'koa';
import { MediaError } from '../core/errors.ts';

/** Request and job limits of the ingress (docs/configuration.md, "Limits"). */
export interface IngressLimits {
  /** Requests per second one API key may make on average (RATE_LIMIT_PER_SECOND); 0: no limit. */
  ratePerSecond: number;
  /** Requests one API key may make at once after a quiet spell (RATE_LIMIT_BURST). */
  rateBurst: number;
  /** Jobs of one organisation queued or running at once (MAX_ACTIVE_JOBS_PER_ORG); 0: no cap. */
  maxActiveJobsPerOrg: number;
}

/** Seconds a caller refused by the job cap is asked to wait: about the time a short job takes. */
const ACTIVE_JOBS_RETRY_AFTER_S = 10;

/**
 * Spends one request of `apiKey`'s rate; throws rate_limited (429, Retry-After set on `ctx`) when
 * none is left.
 */
export type RateLimiter = (apiKey: string, ctx: Context) => void;

/**
 * A token bucket per API key, in this ingress copy's memory: a key has `burst` tokens, spends
 * one per request and regains `ratePerSecond` per second. Only keys that authenticated get a
 * bucket, so the map is bounded by API_KEYS. With n copies behind a load balancer a key may
 * make up to n times the rate.
 */
export function createRateLimiter(
  limits: Pick<IngressLimits, 'ratePerSecond' | 'rateBurst'>,
  now: () => number = () => performance.now(),
): RateLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const { ratePerSecond, rateBurst } = limits;
  return (apiKey, ctx) => {
    if (ratePerSecond <= 0) return;
    const t = now();
    const bucket = buckets.get(apiKey) ?? { tokens: rateBurst, at: t };
    bucket.tokens = Math.min(rateBurst, bucket.tokens + ((t - bucket.at) / 1000) * ratePerSecond);
    bucket.at = t;
    buckets.set(apiKey, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    const waitS = Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerSecond));
    ctx.set('Retry-After', String(waitS));
    throw new MediaError(
      'rate_limited',
      `this API key may make ${ratePerSecond} requests per second (bursts of ${rateBurst}); retry after ${waitS} s`,
    );
  };
}

/** Refuses a new job when the organisation has `maxActiveJobsPerOrg` queued or running. */
export function refuseOverActiveJobs(
  active: number,
  limits: Pick<IngressLimits, 'maxActiveJobsPerOrg'>,
  ctx: Context,
): void {
  const max = limits.maxActiveJobsPerOrg;
  if (max <= 0 || active < max) return;
  ctx.set('Retry-After', String(ACTIVE_JOBS_RETRY_AFTER_S));
  throw new MediaError(
    'too_many_jobs',
    `this organisation has ${active} jobs queued or running, the most it may have (${max}); retry when some have ended`,
  );
}
