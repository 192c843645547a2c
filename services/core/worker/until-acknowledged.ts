import { setTimeout as delay } from 'node:timers/promises';
import { BusUnavailableError } from '../bus/event-bus.ts';
import type { Logger } from '../observability/logger.ts';
import { fullJitterBackoffMs } from '../time.ts';

/** Runs one publish of an attempt's outcome, again until the bus acknowledges it. */
export type UntilAcknowledged = (publish: () => Promise<void>) => Promise<void>;

/** Backoff between tries, ms: full jitter below 500 ms doubling to 5 s. */
const BACKOFF = { baseMs: 500, capMs: 5000 };

/**
 * Publishing an outcome once the work is done: a failed publish is tried again, with backoff,
 * instead of handing the record back, which would run the whole job again (a broker's failover,
 * about 9 s at Kafka's defaults, can outlast one publish's deadline). A try that was written
 * after all is harmless: outcome events have stable ids (`<jobId>:<type>:<attempt>`), and a
 * retry's request record is encoded once, before its first try. The backoff only spaces out the
 * tries of an I/O that failed at once (refused connections); it holds nothing another job needs,
 * since the record's slot stays taken until its outcome is out either way.
 *
 * Gives up only when `signal` aborts (the record was lost or the worker's grace ran out): the
 * record is then handed back, as before.
 */
export function untilAcknowledged(
  log: Logger,
  signal: AbortSignal,
  random: () => number = Math.random,
): UntilAcknowledged {
  return async (publish) => {
    for (let tries = 1; ; tries++) {
      try {
        await publish();
        return;
      } catch (error) {
        if (!(error instanceof BusUnavailableError) || signal.aborted) throw error;
        log.warn('bus.publish_retried', { tries, error });
        await delay(fullJitterBackoffMs(BACKOFF, tries, random), undefined, { signal }).catch(
          () => {
            throw error;
          },
        );
      }
    }
  };
}
