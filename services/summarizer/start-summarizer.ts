import type { Subscription } from '../core/bus/event-bus.ts';
import { startJobWorker } from '../core/jobs/run-job-worker.ts';
import type { Runtime } from '../core/runtime/create-runtime.ts';
import { createSummaryHandler } from './handle-summary.ts';

export function startSummarizer(rt: Runtime): Promise<Subscription> {
  const { config } = rt;
  const handler = createSummaryHandler({
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
  });
  return startJobWorker(rt, {
    kind: 'summary',
    group: 'summarizer',
    concurrency: config.workerConcurrency,
    maxAttempts: config.maxJobAttempts,
    retryBackoffMs: config.retryBackoffMs,
    jobTimeoutMs: config.jobTimeoutMs,
    handler,
  });
}
