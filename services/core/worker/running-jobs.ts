import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { JobRequested } from '../contracts/types.generated.ts';

/** One attempt running on this worker. */
export interface RunningJob {
  orgId: string;
  attempt: number;
  /** performance.now() at its start. */
  startedAt: number;
  /** Last progress its handler reported (0–100). */
  percent: number;
  /** It only waits (JobContext.waiting): it may move to another worker. */
  movable: boolean;
  /** Its work has begun: it no longer moves. */
  begun: boolean;
}

/** The attempts a worker runs now, by job id: what a stop waits for, and what it tells. */
export interface RunningJobs {
  start(job: Pick<JobRequested, 'jobId' | 'orgId' | 'attempt'>): RunningJob;
  end(jobId: string, running: RunningJob, handedBack: boolean): void;
  /** Jobs whose work has not begun (see RunningJob.begun): each will want a work slot. */
  notBegun(): number;
  /**
   * A stop made visible: `media_worker_draining{kind}` goes to 1, and the log names every
   * running job with how long it has run, how far it is and (from its pace so far) how long it
   * may still take, against the grace after which it is handed back. Returns what logs the end.
   */
  drain(
    log: Logger,
    metrics: Metrics,
    worker: { kind: JobRequested['kind']; group: string },
    graceMs: number,
  ): () => void;
}

export function createRunningJobs(now: () => number = () => performance.now()): RunningJobs {
  const running = new Map<string, RunningJob>();
  let handedBack = 0;
  return {
    start(job) {
      const entry = {
        orgId: job.orgId,
        attempt: job.attempt,
        startedAt: now(),
        percent: 0,
        movable: false,
        begun: false,
      };
      running.set(job.jobId, entry);
      return entry;
    },
    end(jobId, entry, wasHandedBack) {
      if (running.get(jobId) === entry) running.delete(jobId);
      if (wasHandedBack) handedBack += 1;
    },
    notBegun() {
      let n = 0;
      for (const job of running.values()) if (!job.begun) n++;
      return n;
    },
    drain(log, metrics, { kind, group }, graceMs) {
      const startedAt = now();
      const handedBackBefore = handedBack;
      const waitedFor = running.size;
      metrics.workerDraining.set({ kind }, 1);
      log.info('worker.draining', {
        kind,
        group,
        graceMs,
        jobs: [...running].map(([jobId, job]) => describe(jobId, job, startedAt)),
      });
      return () =>
        log.info('worker.drained', {
          kind,
          group,
          waitedFor,
          handedBack: handedBack - handedBackBefore,
          drainMs: Math.round(now() - startedAt),
        });
    },
  };
}

function describe(jobId: string, job: RunningJob, at: number): Record<string, unknown> {
  const runningMs = Math.round(at - job.startedAt);
  // A job's pace so far is the best guess of its rest: ffmpeg's progress is close to linear.
  const remaining =
    job.percent > 0 ? Math.round((runningMs / job.percent) * (100 - job.percent)) : undefined;
  return {
    jobId,
    orgId: job.orgId,
    attempt: job.attempt,
    runningMs,
    progressPercent: job.percent,
    ...(remaining === undefined ? {} : { expectedRemainingMs: remaining }),
  };
}
