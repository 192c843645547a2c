/** A clock passed in, so that tests can hold time still. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** ISO 8601 UTC with exactly six fractional digits (the acknowledgement's `createdAt`). */
export function isoMicros(date: Date, microsWithinMilli = 0): string {
  const base = date.toISOString(); // 2026-11-22T03:19:55.123Z
  const micros = String(Math.trunc(microsWithinMilli) % 1000).padStart(3, '0');
  return `${base.slice(0, -1)}${micros}Z`;
}

/** The current time with the microseconds the platform knows. */
export function nowIsoMicros(clock: Clock): string {
  const micros = Number(process.hrtime.bigint() / 1000n) % 1000;
  return isoMicros(clock.now(), micros);
}

/**
 * Exponential backoff with full jitter and a cap, for every retry the bus schedules (jobs and
 * callbacks): uniform in [0, min(cap, base · 2^(attempt − 1))), so retries of many failures
 * spread out instead of arriving together.
 */
export function fullJitterBackoffMs(
  policy: { baseMs: number; capMs: number },
  attempt: number,
  random: () => number,
): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt - 1, 40));
  return Math.floor(random() * ceiling);
}
