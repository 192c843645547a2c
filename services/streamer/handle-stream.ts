import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  JobRequested,
  JobResult,
  LadderChoice,
  LoudnessReport,
  StreamSpec,
} from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import {
  fetchInput,
  inWorkDir,
  jobWatermark,
  storeKind,
  withCpuSlot,
  type MediaJobDeps,
} from '../core/media-job/media-job.ts';
import type { JobContext, JobHandler } from '../core/worker/job-handler.ts';
import { describeInput } from '../core/media/describe-media.ts';
import { defaultLadder, requestedLadder, type Rung } from './ladder.ts';
import { planPerTitleLadder } from './per-title.ts';
import { checkOutputPixels } from '../core/media/pixel-budget.ts';
import { checkDecodedLength, readInput, type JobInput } from '../core/media/read-input.ts';
import { trimmedInput } from '../core/media/trim.ts';
import type { MeasuredOutput } from '../core/media-job/report-quality.ts';
import { runEncode } from '../core/media-job/run-encode.ts';
import { planJobLoudness, reportLoudness } from '../core/media-job/normalise-loudness.ts';
import type { LoudnessPlan } from '../core/media/loudness.ts';
import { verifyOutput } from '../core/media/verify-output.ts';
import type { MediaStore } from '../core/storage/media-store.ts';
import { inPool, publishObjects } from './publish-objects.ts';
import { AUDIO_RENDITION, firstPassShare } from './build-ladder-args.ts';
import { publishDuringEncode } from './publish-during-encode.ts';
import { joinRendition, measureRungs, RUNG_FRAMES_FILE } from './measure-rungs.ts';
import { item, publishPhases, streamResult } from './publish-stream.ts';
import { planThumbnails } from './thumbnails.ts';
import { streamCaptions, type CaptionInput } from './caption-renditions.ts';
import { writeLadder, type StreamFormat, type WrittenLadder } from './write-ladder.ts';

/** Objects of one stream uploaded at once (each also takes a transfer slot of the process). */
export const PUBLISH_CONCURRENCY = 4;
const DEFAULT_SEGMENT_SECONDS = 4;
/**
 * After a failure or a cancel, how long the uploads under way may take to get their store's
 * answer, ms. An upload cut short may still be stored by the service a moment later (its body
 * had arrived); an answered one is final, so one removal pass clears what the attempt left.
 */
const FINISH_UPLOADS_MS = 30_000;
const VIDEO_CODEC = { h264: 'h264', h265: 'hevc', vp9: 'vp9' } as const;

/**
 * How much a ladder's encode counts in its organisation's fair share of the CPU slots: the
 * pixels it encodes over those of its top rung alone (a transcode at that size counts 1). The
 * default 1080p and 720p ladders count 1.8.
 */
export function ladderCost(rungs: readonly Rung[]): number {
  const top = rungs[0];
  if (!top) return 1;
  const pixels = rungs.reduce((n, r) => n + r.width * r.height, 0);
  return Math.max(1, Math.round((pixels / (top.width * top.height)) * 100) / 100);
}

/**
 * fetch input (transfer slot) → read it (CPU slot) → the caption tracks, the ladder, thumbnails
 * and manifests from one ffmpeg (a CPU slot weighted by ladderCost) → verify each rung → measure each rung's quality
 * (same slot) → publish every object,
 * manifests last (transfer slots). Same job id → same keys under the prefix, overwritten.
 */
export function createStreamHandler(deps: MediaJobDeps): JobHandler {
  return async (job, ctx) => {
    const spec = job.stream;
    if (!spec) throw new MediaError('internal', 'a stream job without stream options');
    return inWorkDir(deps, ctx, async (workDir) => {
      const inputPath = join(workDir, 'input');
      await fetchInput(deps, job, ctx, inputPath);
      const input = trimmedInput(
        await withCpuSlot(deps, ctx, () => readInput(deps, ctx.signal, { inputPath, workDir })),
        spec.trim,
      );
      const { rungs, ladderChoice } = await chooseRungs(deps, ctx, { spec, input, workDir });
      for (const rung of rungs) checkOutputPixels(rung, deps.maxPixels);
      const outDir = join(workDir, 'out');
      const store = deps.resolveStore(job.output.url, ctx.openSecret(job.output.creds));
      // Every key this attempt began to upload: what a failure removes again.
      const touched = new Set<string>();
      const upload = async (key: string): Promise<void> => {
        touched.add(key);
        await publishOne(deps, ctx, { store, prefix: job.output.url, outDir, key });
      };
      try {
        const { ladder, early, quality, loudness } = await deps.slots.cpu.use(
          ctx.signal,
          async () => {
            const o = { spec, input, rungs, workDir, outDir };
            const asked = { asked: spec.loudness, input, encoder: 'aac', workDir } as const;
            const plan = await planJobLoudness(deps, ctx, asked);
            const captions = await streamCaptions(deps, ctx, o);
            const encoded = await encodeLadder(deps, job, ctx, { ...o, plan, captions }, upload);
            const prefix = job.output.url;
            const quality = await measureRungs(deps, ctx, { ...o, ...encoded, prefix });
            const loudness = plan
              ? await streamLoudness(deps, ctx, o, encoded.ladder, plan)
              : undefined;
            return { ...encoded, quality, loudness };
          },
          ctx.orgId,
          ladderCost(rungs),
        );
        return await publish(deps, job, ctx, {
          ...{ spec, input, rungs, outDir, ladder, early, store, quality, loudness, ladderChoice },
          onStarted: (key) => touched.add(key),
        });
      } catch (error) {
        await removePublished(store, job.output.url, touched, ctx);
        throw error;
      }
    });
  };
}

/**
 * The ladder's rungs: the caller's as given, the fixed table's, or the per-title ladder chosen by
 * a probe of the input (in a CPU slot of its own, progress 1–5 %).
 */
async function chooseRungs(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: { spec: StreamSpec; input: JobInput; workDir: string },
): Promise<{ rungs: Rung[]; ladderChoice?: LadderChoice }> {
  const { spec, input } = o;
  const encoder = spec.encoder ?? 'h264';
  const asked = spec.ladder ?? 'fixed';
  if (Array.isArray(asked)) return { rungs: requestedLadder(input.video, asked) };
  const fixed = defaultLadder(input.video, encoder);
  if (asked === 'fixed') return { rungs: fixed };
  // The probe's pixels are those of the fixed ladder's rungs at both qualities.
  const planned = await deps.slots.cpu.use(
    ctx.signal,
    () =>
      ctx.span('probe', () =>
        planPerTitleLadder(deps, ctx, { input, encoder, workDir: o.workDir, progress: [1, 5] }),
      ),
    ctx.orgId,
    ladderCost(fixed),
  );
  ctx.log.info('stream.ladder_chosen', {
    mode: planned.choice.mode,
    rungs: planned.rungs.map((r) => `${r.name}@${r.bitrateKbps}`).join(' '),
  });
  return { rungs: planned.rungs, ladderChoice: planned.choice };
}

interface LadderJob {
  spec: StreamSpec;
  input: JobInput;
  rungs: Rung[];
  workDir: string;
  outDir: string;
  /** What the encode does to the audio's loudness, when the request asked (loudness.ts). */
  plan?: LoudnessPlan | undefined;
  /** The caption tracks published as WebVTT renditions (caption-renditions.ts). */
  captions?: readonly CaptionInput[] | undefined;
}

/** The loudness report of the audio rendition: its init and every segment joined, measured. */
async function streamLoudness(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: LadderJob,
  ladder: WrittenLadder,
  plan: LoudnessPlan,
): Promise<LoudnessReport> {
  const audio = ladder.renditions.find((r) => r.type === 'audio');
  if (!audio) throw new MediaError('output_invalid', 'the audio rendition is missing');
  const dir = join(o.outDir, AUDIO_RENDITION);
  const outputPath = join(o.workDir, 'loudness-audio.mp4');
  await joinRendition(dir, audio, outputPath);
  return reportLoudness(deps, ctx, plan, { outputPath, workDir: o.workDir });
}

/**
 * After a failure or a cancel, what this attempt had published is removed again (best effort,
 * with its own time limit: a canceled job's signal is already aborted), so the prefix holds
 * nothing of it; what cannot be removed is logged, and no manifest names it. Called once every
 * upload of the attempt has ended with its store's answer (FINISH_UPLOADS_MS), so one pass is
 * enough.
 */
async function removePublished(
  store: MediaStore,
  prefix: string,
  keys: ReadonlySet<string>,
  ctx: JobContext,
): Promise<void> {
  if (keys.size === 0) return;
  const signal = AbortSignal.timeout(60_000);
  const removed = new Set<string>();
  // Past the time limit, the pool stops: what it did not remove is counted as left.
  await inPool([...keys], PUBLISH_CONCURRENCY, signal, (key) =>
    store.remove(prefix + key, { signal }).then(
      () => void removed.add(key),
      () => undefined,
    ),
  ).catch(() => undefined);
  const left = [...keys].filter((key) => !removed.has(key));
  if (left.length > 0) ctx.log.warn('stream.objects_left', { count: left.length, first: left[0] });
}

/** One object of the output folder published on its own (a segment while the encode goes on). */
async function publishOne(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: { store: MediaStore; prefix: string; outDir: string; key: string },
): Promise<unknown> {
  const one = await item(o.outDir, o.key, o.key.startsWith(`${AUDIO_RENDITION}/`));
  return publishObjects({
    store: o.store,
    prefix: o.prefix,
    phases: [[one]],
    concurrency: 1,
    rateFloor: deps.rateFloor,
    finishMs: FINISH_UPLOADS_MS,
    signal: ctx.signal,
    around: (upload) => deps.slots.transfer.use(ctx.signal, upload, ctx.orgId),
  });
}

async function encodeLadder(
  deps: MediaJobDeps,
  job: JobRequested,
  ctx: JobContext,
  o: LadderJob,
  upload: (key: string) => Promise<unknown>,
): Promise<{ ladder: WrittenLadder; early: Set<string> }> {
  const { spec, input, rungs } = o;
  const top = rungs[0] ?? input.video.display;
  const watermark = await jobWatermark(deps, job, ctx, o.workDir, spec.watermark);
  let decoded = 0;
  let early = new Set<string>();
  const encoder = spec.encoder ?? 'h264';
  // Progress 5 → 85 over both passes, split by the first's share of the CPU time.
  const analysed = 5 + 80 * firstPassShare(encoder);
  const ladder = await writeLadder(
    async (args, pass) => {
      const expectedSeconds = input.info.durationSeconds;
      if (pass === 'analyse') {
        await runEncode(deps, ctx, args, { from: 5, to: analysed, expectedSeconds }, 'analyse');
        return;
      }
      // Whole segments go out while ffmpeg writes the next ones.
      const publishing = publishDuringEncode({
        outDir: o.outDir,
        renditions: [...rungs.map((r) => r.name), AUDIO_RENDITION],
        concurrency: PUBLISH_CONCURRENCY,
        upload,
      });
      try {
        decoded = await runEncode(deps, ctx, args, { from: analysed, to: 85, expectedSeconds });
      } catch (error) {
        await publishing.stop().catch(() => undefined);
        throw error;
      }
      early = await publishing.stop();
    },
    {
      input,
      rungs,
      encoder,
      segmentSeconds: spec.segmentSeconds ?? DEFAULT_SEGMENT_SECONDS,
      outDir: o.outDir,
      passLogPrefix: join(o.workDir, 'ladder-pass'),
      threads: deps.threads,
      formats: spec.formats ?? (['hls', 'dash'] satisfies StreamFormat[]),
      captions: o.captions,
      ...(watermark ? { watermark } : {}),
      ...(o.plan?.filter ? { loudnessFilter: o.plan.filter } : {}),
      ...(spec.thumbnails
        ? {
            thumbnails: planThumbnails(
              spec.thumbnails,
              input.video.display,
              input.info.durationSeconds,
              top,
            ),
          }
        : {}),
    },
  );
  checkDecodedLength(input.info, decoded);
  await verifyRungs(deps, o, ladder);
  return { ladder, early };
}

/**
 * Each rung read back with ffprobe (its init and first segment joined): container, codec and
 * size as asked. The segments' lengths were measured when the manifests were written.
 */
async function verifyRungs(deps: MediaJobDeps, o: LadderJob, ladder: WrittenLadder): Promise<void> {
  for (const r of ladder.renditions.filter((x) => x.type === 'video')) {
    const first = r.segments[0];
    if (!first) throw new MediaError('output_invalid', `rung ${r.name} has no segments`);
    const dir = join(o.outDir, r.name);
    const path = join(o.workDir, `verify-${r.name}.mp4`);
    await writeFile(
      path,
      Buffer.concat([await readFile(join(dir, r.init)), await readFile(join(dir, first.uri))]),
    );
    await verifyOutput(deps.probe, path, {
      format: 'mp4',
      videoCodec: VIDEO_CODEC[o.spec.encoder ?? 'h264'],
      width: r.width ?? 0,
      height: r.height ?? 0,
      durationSeconds: first.durationSeconds,
      toleranceSeconds: 0.5,
    });
  }
}

async function publish(
  deps: MediaJobDeps,
  job: JobRequested,
  ctx: JobContext,
  o: Omit<LadderJob, 'workDir'> & {
    ladder: WrittenLadder;
    early: Set<string>;
    store: MediaStore;
    quality: ReadonlyMap<string, MeasuredOutput>;
    loudness: LoudnessReport | undefined;
    ladderChoice: LadderChoice | undefined;
    onStarted: (key: string) => void;
  },
): Promise<JobResult> {
  const prefix = job.output.url;
  const { store, early } = o;
  const earlyBytes = o.ladder.renditions
    .flatMap((r) => r.segments.filter((s) => early.has(`${r.name}/${s.uri}`)))
    .reduce((n, s) => n + s.bytes, 0);
  const frames = [...o.quality].flatMap(([name, m]) =>
    m.framesFile ? [`${name}/${RUNG_FRAMES_FILE}`] : [],
  );
  const phases = await publishPhases(o.outDir, o.ladder, early, frames);
  const total = phases.flat().reduce((n, i) => n + i.sizeBytes, 0);
  const published = await ctx.span('upload', () =>
    publishObjects({
      store,
      prefix,
      phases,
      concurrency: PUBLISH_CONCURRENCY,
      rateFloor: deps.rateFloor,
      finishMs: FINISH_UPLOADS_MS,
      signal: ctx.signal,
      around: (upload) => deps.slots.transfer.use(ctx.signal, upload, ctx.orgId),
      onBytes: (n) => ctx.progress(86 + (13 * n) / Math.max(1, total), 'upload'),
      onStarted: o.onStarted,
    }),
  );
  const bytes = earlyBytes + published.bytes;
  deps.metrics.bytesTransferred.inc({ direction: 'out', store: storeKind(prefix) }, bytes);
  const top = o.rungs[0];
  const seconds = o.ladder.renditions[0]?.segments.reduce((n, s) => n + s.durationSeconds, 0) ?? 0;
  return {
    outputUrl: prefix,
    format: 'cmaf',
    videoCodec: VIDEO_CODEC[o.spec.encoder ?? 'h264'],
    width: top?.width ?? 0,
    height: top?.height ?? 0,
    durationSeconds: Math.round(seconds * 1000) / 1000,
    sizeBytes: bytes,
    stream: streamResult(prefix, o.ladder, o.rungs, {
      segmentSeconds: o.spec.segmentSeconds ?? DEFAULT_SEGMENT_SECONDS,
      objects: early.size + published.keys.length,
      totalBytes: bytes,
      quality: new Map([...o.quality].map(([name, m]) => [name, m.quality])),
      ladderChoice: o.ladderChoice,
    }),
    input: describeInput(o.input),
    ...(o.loudness ? { loudness: o.loudness } : {}),
  };
}
