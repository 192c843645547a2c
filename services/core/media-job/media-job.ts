import { rm } from 'node:fs/promises';
import type { JobRequested, Watermark } from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import type { Prober, VideoRateReader } from '../media/probe-media.ts';
import type { QualityTools } from '../media/measure-quality.ts';
import type { FfmpegRunner } from '../media/run-ffmpeg.ts';
import { prepareWatermark, type PreparedWatermark } from '../watermarks/prepare-watermark.ts';
import type { FFMPEG_PASSES, Metrics, StoreKind } from '../observability/metrics.ts';
import type { MediaStore, StoreResolver } from '../storage/media-store.ts';
import type { WatermarkLibrary } from '../watermarks/watermark-library.ts';
import { withRateFloor, type RateFloor } from '../storage/transfer-rate.ts';
import type { JobContext } from '../worker/job-handler.ts';
import type { Semaphore } from '../scheduling/semaphore.ts';
import { makeJobDir } from './work-dirs.ts';

/** What a media job handler (transcoder, summarizer, streamer) is built from. */
export interface MediaJobDeps {
  resolveStore: StoreResolver;
  /** The http(s) store, for watermark images. */
  httpStore: MediaStore;
  runFfmpeg: FfmpegRunner;
  probe: Prober;
  /** The delivered video bitrate of an output the service wrote (the transcoder's rate check). */
  videoRate: VideoRateReader;
  metrics: Metrics;
  /** Largest input downloaded, in bytes. */
  maxInputBytes: number;
  /** Largest frame area of an input or an output, in pixels (default 8K UHD, 33 177 600). */
  maxPixels: number;
  /** ffmpeg without progress for this long is killed, ms. */
  stallTimeoutMs: number;
  /** Threads given to one ffmpeg (its share of the cores per CPU slot). */
  threads: number;
  fontFile: string;
  /** The organisations' named watermark images (undefined: none set up). */
  watermarks: WatermarkLibrary | undefined;
  /** Root of the job work directories (swept at start; see sweepJobDirs). */
  workRoot: string;
  /** Slots shared by every job of the process: `cpu` for probe/ffmpeg/verify, `transfer` for downloads and uploads. */
  slots: { cpu: Semaphore; transfer: Semaphore };
  /** Downloads and uploads slower than this are cut. */
  rateFloor: RateFloor;
  /** What outputs' quality reports are measured with (VMAF only when an ffmpeg with libvmaf is set up). */
  quality: QualityTools;
}

/**
 * Runs `work` in a job directory of its own, removed afterwards whatever happens. A failure's
 * cause (ffmpeg's stderr, local paths) is logged here; the caller sees only its message.
 */
export async function inWorkDir<T>(
  deps: MediaJobDeps,
  ctx: JobContext,
  work: (dir: string) => Promise<T>,
): Promise<T> {
  const dir = await makeJobDir(deps.workRoot);
  try {
    return await work(dir);
  } catch (error) {
    if (error instanceof MediaError && error.cause !== undefined)
      ctx.log.warn('job.failure_detail', { code: error.code, error });
    throw error;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Runs the probe/ffmpeg/verify part of a job in a CPU slot (waiting for one if all are busy).
 * Until it holds its first slot the job only waits, so it may move to a worker with a free one.
 */
export function withCpuSlot<T>(
  deps: MediaJobDeps,
  ctx: JobContext,
  work: () => Promise<T>,
): Promise<T> {
  ctx.waiting();
  return deps.slots.cpu.use(
    ctx.signal,
    async () => {
      await ctx.begin();
      return work();
    },
    ctx.orgId,
  );
}

/** Streams the job's input to `path` with the input credentials (opened only here), in a transfer slot. */
export async function fetchInput(
  deps: MediaJobDeps,
  job: JobRequested,
  ctx: JobContext,
  path: string,
): Promise<void> {
  const store = deps.resolveStore(job.input.url, ctx.openSecret(job.input.creds));
  // A download is no work lost if the job moves: its new owner fetches the input again.
  ctx.waiting();
  const { bytes } = await deps.slots.transfer.use(ctx.signal, () =>
    ctx.span('download', () =>
      withRateFloor(deps.rateFloor, 'input', ctx.signal, (signal, onBytes) =>
        store.download(job.input.url, path, {
          signal,
          maxBytes: deps.maxInputBytes,
          onProgress: (n) => {
            onBytes(n);
            ctx.progress(0, 'download');
          },
        }),
      ),
    ),
  );
  deps.metrics.bytesTransferred.inc({ direction: 'in', store: storeKind(job.input.url) }, bytes);
}

/** Uploads `path` to the job's output with the output credentials, in a transfer slot; same job, same object. */
export function deliverOutput(
  deps: MediaJobDeps,
  job: JobRequested,
  ctx: JobContext,
  path: string,
  contentType: string,
): Promise<void> {
  return deliverFile(deps, job, ctx, path, { url: job.output.url, contentType });
}

/**
 * Uploads `path` to `to.url` (the job's output, or a file beside it in the same store) with the
 * output credentials, in a transfer slot.
 */
export async function deliverFile(
  deps: MediaJobDeps,
  job: JobRequested,
  ctx: JobContext,
  path: string,
  to: { url: string; contentType: string },
): Promise<void> {
  const store = deps.resolveStore(to.url, ctx.openSecret(job.output.creds));
  const { bytes } = await deps.slots.transfer.use(ctx.signal, () =>
    ctx.span('upload', () =>
      withRateFloor(deps.rateFloor, 'output', ctx.signal, (signal, onBytes) =>
        store.upload(path, to.url, {
          signal,
          contentType: to.contentType,
          onProgress: (n) => {
            onBytes(n);
            ctx.progress(96, 'upload');
          },
        }),
      ),
    ),
  );
  deps.metrics.bytesTransferred.inc({ direction: 'out', store: storeKind(to.url) }, bytes);
}

/** The store a URL's scheme names, as a metric label (`gcp://` is Google Cloud Storage). */
export function storeKind(url: string): StoreKind {
  const scheme = url.slice(0, url.indexOf(':'));
  if (scheme === 's3' || scheme === 'azure') return scheme;
  return scheme === 'gcp' ? 'gcs' : 'http';
}

/**
 * One ffmpeg pass of a job, in a span of its own, its speed measured: seconds of media it went
 * through (`mediaSeconds`, read once it is done) per second of wall time.
 */
export async function ffmpegPass<T>(
  deps: { metrics?: Metrics },
  ctx: JobContext,
  pass: (typeof FFMPEG_PASSES)[number],
  mediaSeconds: () => number,
  work: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  const result = await ctx.span(`ffmpeg ${pass}`, work);
  const wall = (performance.now() - started) / 1000;
  const media = mediaSeconds();
  if (deps.metrics && wall > 0 && media > 0) {
    const labels = { kind: ctx.kind, pass };
    deps.metrics.ffmpegSpeed.observe(labels, media / wall);
    deps.metrics.ffmpegMediaSeconds.inc(labels, media);
    deps.metrics.ffmpegSeconds.inc(labels, wall);
  }
  return result;
}

/** The job's watermark, if it asks for one, made ready in its work directory. */
export async function jobWatermark(
  deps: MediaJobDeps,
  job: JobRequested,
  ctx: JobContext,
  workDir: string,
  watermark: Watermark | undefined,
): Promise<PreparedWatermark | undefined> {
  if (!watermark) return undefined;
  return prepareWatermark(watermark, job.orgId, workDir, {
    http: deps.httpStore,
    probe: deps.probe,
    fontFile: deps.fontFile,
    library: deps.watermarks,
    signal: ctx.signal,
  });
}
