import type { Subscription } from '../bus/event-bus.ts';
import type { MediaJobDeps } from '../jobs/media-job.ts';
import { startJobWorker, type JobHandler, type JobKind } from '../jobs/run-job-worker.ts';
import type { Runtime } from './create-runtime.ts';

/** The handler deps every media worker gets from the runtime. */
export function mediaJobDeps(rt: Runtime): MediaJobDeps {
  const { config } = rt;
  return {
    resolveStore: rt.resolveStore,
    httpStore: rt.httpStore,
    runFfmpeg: rt.runFfmpeg,
    probe: rt.probe,
    metrics: rt.metrics,
    maxInputBytes: config.maxInputBytes,
    stallTimeoutMs: config.stallTimeoutMs,
    threads: rt.ffmpegThreads,
    fontFile: config.fontFile,
    watermarkImagesDir: config.watermarkImagesDir,
  };
}

/** Subscribes a worker service (consumer group = service name) with the configured limits. */
export function startMediaWorker(rt: Runtime, kind: JobKind, group: string, makeHandler: (deps: MediaJobDeps) => JobHandler): Promise<Subscription> {
  const { config } = rt;
  return startJobWorker(rt, {
    kind,
    group,
    concurrency: config.workerConcurrency,
    maxAttempts: config.maxJobAttempts,
    retryBackoffMs: config.retryBackoffMs,
    retryBackoffMaxMs: config.retryBackoffMaxMs,
    jobTimeoutMs: config.jobTimeoutMs,
    handler: makeHandler(mediaJobDeps(rt)),
  });
}
