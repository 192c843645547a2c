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

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
