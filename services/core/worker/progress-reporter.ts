import type { JobProgress, JobRequested } from '../contracts/types.generated.ts';
import type { Logger } from '../observability/logger.ts';

export type ProgressStage = 'download' | 'encode' | 'upload';

export interface ProgressReporterOptions {
  /** Least time between two progress events of one job, ms. */
  intervalMs: number;
  job: Pick<JobRequested, 'jobId' | 'kind' | 'orgId' | 'attempt'>;
  /** Keeps the bus lease alive; called on every report that is not throttled. */
  heartbeat(): Promise<void>;
  publish(data: JobProgress): Promise<void>;
  log: Logger;
}

/**
 * Progress is latest-wins: at most one progress publish in flight, a newer report replaces the
 * one waiting, and stop() drops what is left, so a slow bus costs progress events, never the
 * outcome's promptness. A progress event may therefore land after the outcome; readers rank
 * states (the status view ignores progress after an outcome of the same attempt).
 */
export function progressReporter(o: ProgressReporterOptions): {
  report: (percent: number, stage: ProgressStage) => void;
  stop: () => void;
} {
  let last = 0;
  let waiting: JobProgress | undefined;
  let inFlight = false;
  let stopped = false;
  const drain = async (): Promise<void> => {
    inFlight = true;
    try {
      for (let data = waiting; data && !stopped; data = waiting) {
        waiting = undefined;
        // A lost progress event is only logged.
        await o
          .publish(data)
          .catch((error: unknown) => o.log.warn('job.progress_not_published', { error }));
      }
    } finally {
      inFlight = false;
    }
  };
  return {
    report: (percent, stage) => {
      const now = performance.now();
      if (stopped || now - last < o.intervalMs) return;
      last = now;
      // The heartbeat rides on real progress, whether or not a publish is still under way.
      o.heartbeat().catch((error: unknown) => o.log.debug('job.heartbeat_failed', { error }));
      waiting = {
        ...o.job,
        percent: Math.max(0, Math.min(100, Math.round(percent * 10) / 10)),
        stage,
      };
      if (!inFlight) void drain();
    },
    stop: () => {
      stopped = true;
      waiting = undefined;
    },
  };
}
