import type { Subscription } from '../bus/event-bus.ts';
import { ConfigError } from '../config.ts';
import { resolve } from 'node:path';
import type { MediaJobDeps } from '../media-job/media-job.ts';
import { findVmafTool, type QualityTools } from '../media/measure-quality.ts';
import { createFfmpegRunner } from '../media/run-ffmpeg.ts';
import type { JobHandler, JobKind } from '../worker/job-handler.ts';
import { startJobWorker } from '../worker/run-job-worker.ts';
import { sweepJobDirs } from '../media-job/work-dirs.ts';
import { createAddressPolicy } from '../net/address-policy.ts';
import { checkBoundedTools, MissingToolError } from '../media/bounded-command.ts';
import type { Runtime } from './create-runtime.ts';

/** The handler deps every media worker gets from the runtime. */
export function mediaJobDeps(rt: Runtime, quality: QualityTools): MediaJobDeps {
  const { config } = rt;
  return {
    resolveStore: rt.resolveStore,
    httpStore: rt.httpStore,
    runFfmpeg: rt.runFfmpeg,
    probe: rt.probe,
    videoRate: rt.videoRate,
    metrics: rt.metrics,
    maxInputBytes: config.maxInputBytes,
    maxPixels: config.maxPixels,
    stallTimeoutMs: config.stallTimeoutMs,
    threads: rt.ffmpegThreads,
    fontFile: config.fontFile,
    watermarks: rt.watermarks,
    workRoot: rt.workRoot,
    slots: rt.slots,
    rateFloor: {
      minBytesPerSecond: config.minTransferBytesPerSecond,
      windowMs: config.transferRateWindowMs,
    },
    quality,
  };
}

// Once per runtime: in all-in-one mode the three media workers share one root, and a later
// sweep could remove a dir the first worker's job just made.
const prepared = new WeakMap<Runtime, Promise<QualityTools>>();

/**
 * Checks that ffmpeg can be started bounded, sweeps the work root of dead processes' dirs, and
 * finds the VMAF ffmpeg (its absence is warned, never fatal).
 */
function prepareMediaWork(rt: Runtime): Promise<QualityTools> {
  let once = prepared.get(rt);
  if (!once) {
    once = (async () => {
      const bounds = { memoryLimitBytes: rt.config.ffmpegMemoryLimitBytes };
      await checkBoundedTools([rt.config.ffmpegPath, rt.config.ffprobePath], bounds).catch(
        (error: unknown) => {
          if (error instanceof MissingToolError)
            throw new ConfigError(error.message, { cause: error });
          throw error;
        },
      );
      await sweepJobDirs(rt.workRoot, rt.log);
      return qualityTools(rt, bounds);
    })();
    prepared.set(rt, once);
  }
  return once;
}

async function qualityTools(
  rt: Runtime,
  bounds: { memoryLimitBytes: number },
): Promise<QualityTools> {
  const path = resolve(rt.config.vmafFfmpegPath);
  const vmaf = await findVmafTool(path, createFfmpegRunner(path, bounds), {
    subsample: rt.config.qualityVmafSubsample,
    signal: AbortSignal.timeout(60_000),
  });
  if ('missing' in vmaf) rt.log.warn('quality.vmaf_unavailable', { path, reason: vmaf.missing });
  return { runFfmpeg: rt.runFfmpeg, vmaf };
}

/**
 * Subscribes a worker service (consumer group = service name) with the configured limits. The
 * bus hands it up to its CPU slots + TRANSFER_CONCURRENCY jobs, so transfers can run
 * while every CPU slot encodes; the slots inside the handler keep each kind of work bounded.
 */
export async function startMediaWorker(
  rt: Runtime,
  kind: JobKind,
  group: string,
  makeHandler: (deps: MediaJobDeps) => JobHandler,
): Promise<Subscription> {
  const { config } = rt;
  const quality = await prepareMediaWork(rt);
  return startJobWorker(rt, {
    kind,
    group,
    concurrency: rt.cpuSlots + config.transferConcurrency,
    workSlots: rt.slots.cpu,
    maxAttempts: config.maxJobAttempts,
    retryBackoffMs: config.retryBackoffMs,
    retryBackoffMaxMs: config.retryBackoffMaxMs,
    jobTimeoutMs: config.jobTimeoutMs,
    orgWeights: config.orgWeights,
    orgMaxRunning: config.orgMaxRunning,
    admission: {
      addressPolicy: createAddressPolicy({
        allowPrivateNetworks: config.allowPrivateNetworks,
        allowList: config.addressAllowList,
      }),
      knownOrgs: config.knownOrgs,
      contracts: rt.contracts,
    },
    handler: makeHandler(mediaJobDeps(rt, quality)),
  });
}
