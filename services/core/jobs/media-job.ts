import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobRequested } from '../contracts/types.generated.ts';
import type { Prober } from '../media/probe-media.ts';
import type { FfmpegRunner } from '../media/run-ffmpeg.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { MediaStore, StoreResolver } from '../storage/media-store.ts';
import type { JobContext } from './run-job-worker.ts';

/** What a media job handler (transcoder, summarizer) is built from. */
export interface MediaJobDeps {
  resolveStore: StoreResolver;
  /** The http(s) store, for watermark images. */
  httpStore: MediaStore;
  runFfmpeg: FfmpegRunner;
  probe: Prober;
  metrics: Metrics;
  /** Largest input downloaded, in bytes. */
  maxInputBytes: number;
  /** ffmpeg without progress for this long is killed, ms. */
  stallTimeoutMs: number;
  /** Threads given to one ffmpeg (its share of the cores). */
  threads: number;
  fontFile: string;
  /** Named watermark images, `<dir>/<orgId>/<imageName>`. */
  watermarkImagesDir: string | undefined;
}

/** Runs `work` in a temp directory of its own, removed afterwards whatever happens. */
export async function inWorkDir<T>(prefix: string, work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), `media-${prefix}-`));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Streams the job's input to `path` with the input credentials (opened only here). */
export async function fetchInput(deps: MediaJobDeps, job: JobRequested, ctx: JobContext, path: string): Promise<void> {
  const store = deps.resolveStore(job.input.url, ctx.openSecret(job.input.creds));
  const { bytes } = await store.download(job.input.url, path, {
    signal: ctx.signal,
    maxBytes: deps.maxInputBytes,
    onProgress: () => ctx.progress(0, 'download'),
  });
  deps.metrics.bytesTransferred.inc({ direction: 'in' }, bytes);
}

/** Uploads `path` to the job's output with the output credentials; same job, same object. */
export async function deliverOutput(deps: MediaJobDeps, job: JobRequested, ctx: JobContext, path: string, contentType: string): Promise<void> {
  const store = deps.resolveStore(job.output.url, ctx.openSecret(job.output.creds));
  const { bytes } = await store.upload(path, job.output.url, { signal: ctx.signal, contentType, onProgress: () => ctx.progress(96, 'upload') });
  deps.metrics.bytesTransferred.inc({ direction: 'out' }, bytes);
}
