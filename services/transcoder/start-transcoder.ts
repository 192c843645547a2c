import type { Subscription } from '../core/bus/event-bus.ts';
import { startJobWorker } from '../core/jobs/run-job-worker.ts';
import type { Runtime } from '../core/runtime/create-runtime.ts';
import { createTranscodeHandler } from './handle-transcode.ts';

export function startTranscoder(rt: Runtime): Promise<Subscription> {
  const { config } = rt;
  const handler = createTranscodeHandler({
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
    kind: 'transcode',
    group: 'transcoder',
    concurrency: config.workerConcurrency,
    maxAttempts: config.maxJobAttempts,
    retryBackoffMs: config.retryBackoffMs,
    jobTimeoutMs: config.jobTimeoutMs,
    handler,
  });
}
