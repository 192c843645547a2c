import { fullJitterBackoffMs } from '../core/time.ts';

/** How callback retries are spaced and when they stop. */
export interface RetryPolicy {
  /** Base of the exponential backoff, in ms. */
  backoffMs: number;
  /** Largest backoff, in ms, before Retry-After is applied. */
  backoffMaxMs: number;
  /** No attempt is made later than this long after the first one, in ms. */
  horizonMs: number;
}

export type RetryPlan = { retry: true; dueAt: Date } | { retry: false; reason: string };

/**
 * The due time of the attempt after `attempt` failed: exponential backoff with full jitter
 * (random in [0, min(cap, base × 2^(attempt-1))]), never sooner than the receiver's Retry-After,
 * and given up when that time falls beyond the horizon counted from `firstAttemptAt`.
 */
export function planRetry(
  policy: RetryPolicy,
  failed: { attempt: number; firstAttemptAt: Date; retryAfterMs?: number | undefined },
  now: Date,
  random: () => number = Math.random,
): RetryPlan {
  const backoff = fullJitterBackoffMs(
    { baseMs: policy.backoffMs, capMs: policy.backoffMaxMs },
    failed.attempt,
    random,
  );
  const delay = Math.max(backoff, failed.retryAfterMs ?? 0);
  const dueAt = new Date(now.getTime() + delay);
  const horizon = failed.firstAttemptAt.getTime() + policy.horizonMs;
  if (dueAt.getTime() > horizon)
    return {
      retry: false,
      reason: `retry horizon of ${Math.round(policy.horizonMs / 1000)} s passed`,
    };
  return { retry: true, dueAt };
}

/** A Retry-After header (delay in seconds, or an HTTP date) as ms from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}
