/**
 * The per-title ladder: each rung of the fixed table (ladder.ts) given the rate its picture needs
 * to reach a quality target, measured on this title rather than assumed. A probe encodes sampled
 * stretches of the input at every rung's size at two constant qualities, measures each with VMAF
 * against the stretches made into the rung's picture as the ladder makes it, fits the rung's
 * quality against its rate, and reads off the rate of the target. Rates stay between a floor and
 * the fixed table's rate for the size; a rung that adds nothing is dropped.
 */
import { join } from 'node:path';
import { rm } from 'node:fs/promises';
import type { LadderChoice } from '../core/contracts/types.generated.ts';
import type { MediaJobDeps } from '../core/media-job/media-job.ts';
import { runEncode } from '../core/media-job/run-encode.ts';
import { measureQualities, type QualityTools } from '../core/media/measure-quality.ts';
import { encodedFrameRate, type QualityReference } from '../core/media/quality-args.ts';
import { BT709_OUTPUT_ARGS, pictureFilters } from '../core/media/picture-filters.ts';
import type { JobInput } from '../core/media/read-input.ts';
import { inputArgs } from '../core/media/run-ffmpeg.ts';
import { jobInputArgs } from '../core/media/trim.ts';
import type { JobContext } from '../core/worker/job-handler.ts';
import { downscale } from './build-ladder-args.ts';
import { defaultLadder, encoderFactor, type LadderEncoder, type Rung } from './ladder.ts';

/** VMAF every rung aims at, each measured at its own size (the quality report's measure). */
export const TARGET_VMAF = 94;
/** The probe's two constant qualities (x264 CRF): they bracket the target on most pictures. */
export const PROBE_CRFS = [20, 27] as const;
/** x264 preset of the probe encodes. */
const PROBE_PRESET = 'veryfast';
/**
 * The ladder's x264 (`slow`, two passes) reaches the probe's (`veryfast`, constant quality)
 * VMAF with this share of its bits. Measured on bigbuckbunny 720p, whole: veryfast CRF 20 took
 * 1827 kb/s for VMAF 93.71; two-pass slow scored 92.64 at 1200 and 95.04 at 1700, so about 1530
 * for the same 93.71 (0.84). The per-title rungs of docs/benchmarks.md#per-title-ladder land
 * within 0.2 of the target on that clip.
 */
export const LADDER_GAIN = 0.85;
/** No rung below this share of the fixed table's rate for its size, nor below FLOOR_KBPS. */
export const FLOOR_SHARE = 0.15;
export const FLOOR_KBPS = 100;
/**
 * A rung is dropped when the rung kept above it has less than STEP_RATIO times its rate: a
 * player that steps down to it saves too little to be worth a smaller picture.
 */
export const STEP_RATIO = 1.5;
/**
 * Length of one sampled stretch, seconds. Short stretches spread over the input represent a
 * varied title better than a few long ones: on a minute of mixed scenes, three 2 s stretches
 * chose rates that scored 92.6 and 90.5 against the target 94; six 1 s stretches chose about the
 * table's rates, which score 93.7.
 */
const STRETCH_SECONDS = 1;
/** The probe reads this share of the input, in at least MIN_STRETCHES and at most MAX_STRETCHES. */
const SAMPLE_SHARE = 0.1;
const MIN_STRETCHES = 3;
const MAX_STRETCHES = 30;
/** VMAF of every n-th probe frame (the report's own setting is for the outputs). */
const PROBE_VMAF_SUBSAMPLE = 4;
/**
 * The ladder's VBV (see ladder.ts): peak 1.2× the average, a buffer of one second at the peak.
 * A rung's rate must let the buffer hold the probe's largest frames (see peakKbps).
 */
const VBV_PEAK = 1.2;

/** One stretch of the input the probe reads: seconds from the (trimmed) input's start. */
export interface Stretch {
  startSeconds: number;
  seconds: number;
}

/**
 * The stretches the probe encodes: SAMPLE_SHARE of the input in stretches of STRETCH_SECONDS,
 * at least MIN_STRETCHES, each in the middle of an equal share of the input; the whole input when the
 * stretches would cover half of it or more.
 */
export function sampleStretches(durationSeconds: number): Stretch[] {
  const count = Math.min(
    MAX_STRETCHES,
    Math.max(MIN_STRETCHES, Math.round((durationSeconds * SAMPLE_SHARE) / STRETCH_SECONDS)),
  );
  if (!(count * STRETCH_SECONDS * 2 < durationSeconds))
    return [{ startSeconds: 0, seconds: round3(Math.max(0, durationSeconds)) }];
  const share = durationSeconds / count;
  return Array.from({ length: count }, (_, k) => ({
    startSeconds: round3(share * (k + 0.5) - STRETCH_SECONDS / 2),
    seconds: STRETCH_SECONDS,
  }));
}

/**
 * The lowest average rate (kb/s) whose VBV holds an encode's peaks, from its frames' sizes
 * (bytes, in order, `frameRate` a second): the buffer (1.2 × rate × 1 s) must hold its largest
 * frame, and any second of frames must fit in the buffer plus a second of refill at the peak
 * rate. On still pictures the ladder's rate is set by this, not by the average: a photograph's
 * keyframe at the probe's quality can be most of a second's bits.
 */
export function peakKbps(frameBytes: readonly number[], frameRate: number): number {
  const window = Math.max(1, Math.round(frameRate));
  let largest = 0;
  let second = 0;
  let sum = 0;
  for (const [k, bytes] of frameBytes.entries()) {
    largest = Math.max(largest, bytes);
    sum += bytes - (k >= window ? (frameBytes[k - window] ?? 0) : 0);
    second = Math.max(second, sum);
  }
  return Math.max((largest * 8) / VBV_PEAK, (second * 8) / (2 * VBV_PEAK)) / 1000;
}

/**
 * One probe encode of a rung: its constant quality, the rate it takes in the ladder (the larger
 * of its average over the sample and the rate whose VBV holds its peaks, see peakKbps), its VMAF.
 */
export interface ProbePoint {
  crf: number;
  kbps: number;
  averageKbps: number;
  peakKbps: number;
  vmaf: number;
}

/** A rung's probe: its size and its points. */
export interface RungProbe {
  rung: Rung;
  points: ProbePoint[];
}

/**
 * The rate at which a rung's picture reaches `target`, from its probe points: quality fits
 * 100 − VMAF = c · rate^(−α) (a straight line in log–log; α 1.0–1.1 on animation, 2.1 on noisy
 * fast motion, so it is fitted per rung), then scaled by the ladder encoder's gain over the
 * probe's. Undefined when the points cannot be fitted (equal rates, or every point at 100).
 */
export function neededKbps(points: readonly ProbePoint[], target: number): number | undefined {
  const usable = points.filter((p) => p.kbps > 0 && p.vmaf < 100);
  const [a, b] = [...usable].sort((x, y) => x.kbps - y.kbps);
  if (!a) return undefined;
  const gapA = 100 - a.vmaf;
  const gapT = 100 - target;
  // One usable point: a slope of 1 (the gentlest measured), which overstates the rate needed.
  let alpha = 1;
  if (b && b.kbps > a.kbps * 1.01) {
    const fitted = Math.log(gapA / (100 - b.vmaf)) / Math.log(b.kbps / a.kbps);
    if (Number.isFinite(fitted)) alpha = Math.min(3, Math.max(0.5, fitted));
  }
  return a.kbps * Math.pow(gapA / gapT, 1 / alpha) * LADDER_GAIN;
}

/** The ladder chosen and why, rung by rung (the result's `ladderChoice`). */
export interface PerTitleLadder {
  rungs: Rung[];
  choice: LadderChoice;
}

/**
 * The per-title ladder from the fixed table's rungs and their probes: each rung at the rate its
 * probe says reaches TARGET_VMAF (for the ladder's encoder: H.265 and VP9 by the table's
 * encoder factor), never above the table's rate for the size, never below the floor; then,
 * from the top down, a rung whose rate is within STEP_RATIO of the last rung kept is dropped
 * (the top rung always stays).
 */
export function chooseLadder(
  probes: readonly RungProbe[],
  encoder: LadderEncoder,
  sample: readonly Stretch[],
): PerTitleLadder {
  const decided = probes.map(({ rung, points }) => {
    const fixed = rung.bitrateKbps;
    const floor = Math.max(FLOOR_KBPS, Math.round(fixed * FLOOR_SHARE));
    const raw = neededKbps(points, TARGET_VMAF);
    const needed = raw === undefined ? undefined : Math.round(raw * encoderFactor(encoder));
    let chosen = fixed;
    let reason: string;
    if (needed === undefined) reason = 'the probe could not be fitted: the fixed rate';
    else if (needed >= fixed)
      reason = `needs ${needed} kb/s for the target: capped at the fixed rate`;
    else if (needed <= floor) {
      chosen = floor;
      reason = `needs ${needed} kb/s for the target: raised to the floor`;
    } else {
      chosen = needed;
      reason = 'the rate the probe says reaches the target';
    }
    return { rung, points, fixed, floor, needed, chosen, reason };
  });
  let last: number | undefined;
  const kept = decided.map((d) => {
    const above = last;
    const drop = above !== undefined && d.chosen * STEP_RATIO > above;
    if (!drop) last = d.chosen;
    return { ...d, kept: !drop, above };
  });
  const rungs = kept.filter((d) => d.kept).map((d) => withRate(d.rung, d.chosen));
  const top = kept[0];
  return {
    rungs,
    choice: {
      mode: 'per-title',
      targetVmaf: TARGET_VMAF,
      sample: sample.map((s) => ({ startSeconds: s.startSeconds, seconds: round3(s.seconds) })),
      ...(top?.needed !== undefined
        ? { complexity: round3((top.needed * 1000) / (top.rung.width * top.rung.height)) }
        : {}),
      rungs: kept.map((d) => ({
        name: d.rung.name,
        width: d.rung.width,
        height: d.rung.height,
        fixedKbps: d.fixed,
        floorKbps: d.floor,
        ...(d.needed !== undefined ? { neededKbps: d.needed } : {}),
        chosenKbps: d.chosen,
        kept: d.kept,
        reason: d.kept
          ? d.reason
          : `dropped: within ${STEP_RATIO}× of the ${d.above ?? 0} kb/s of the rung kept above (${d.reason})`,
        points: d.points.map((p) => ({
          crf: p.crf,
          kbps: round1(p.kbps),
          averageKbps: round1(p.averageKbps),
          peakKbps: round1(p.peakKbps),
          vmaf: round3(p.vmaf),
        })),
      })),
    } as LadderChoice,
  };
}

/** A rung at another average rate, its VBV scaled with it (peak 1.2×, one second's buffer). */
function withRate(rung: Rung, kbps: number): Rung {
  const peak = Math.round((rung.maxrateKbps / rung.bitrateKbps) * kbps);
  return { ...rung, bitrateKbps: kbps, maxrateKbps: peak, bufsizeKbps: peak };
}

/** The fixed table, and why it was kept when the probe could not choose (no VMAF tool, a failure). */
function fixedLadder(input: JobInput, encoder: LadderEncoder, why: string): PerTitleLadder {
  return { rungs: defaultLadder(input.video, encoder), choice: { mode: 'fixed', reason: why } };
}

/**
 * Runs the probe on the job's input and chooses the per-title ladder (see chooseLadder). The
 * probe is one ffmpeg that decodes the sample once and encodes every rung at both qualities,
 * then one metrics ffmpeg for all of them; its files are removed afterwards. Without a VMAF
 * tool, or when the probe fails, the fixed table is used, and the choice says why.
 */
export async function planPerTitleLadder(
  deps: Pick<MediaJobDeps, 'runFfmpeg' | 'stallTimeoutMs' | 'threads' | 'quality' | 'metrics'>,
  ctx: JobContext,
  o: { input: JobInput; encoder: LadderEncoder; workDir: string; progress: [number, number] },
): Promise<PerTitleLadder> {
  const vmaf = deps.quality.vmaf;
  if (!('runFfmpeg' in vmaf))
    return fixedLadder(o.input, o.encoder, `no VMAF measure: ${vmaf.missing}`);
  const candidates = defaultLadder(o.input.video, 'h264');
  const sample = sampleStretches(o.input.info.durationSeconds);
  const outputs = candidates.flatMap((rung, k) =>
    PROBE_CRFS.map((crf) => ({ rung, k, crf, path: join(o.workDir, `probe-${k}-${crf}.mp4`) })),
  );
  const [from, to] = o.progress;
  const sampleSeconds = sample.reduce((n, s) => n + s.seconds, 0);
  try {
    await runEncode(
      deps,
      ctx,
      probeArgs(o.input, candidates, sample, outputs, deps.threads),
      {
        from,
        to: from + (to - from) / 2,
        expectedSeconds: sampleSeconds,
      },
      'analyse',
    );
    const tools: QualityTools = {
      ...deps.quality,
      vmaf: { ...vmaf, subsample: PROBE_VMAF_SUBSAMPLE },
    };
    const measured = await measureQualities(tools, {
      outputs: outputs.map((p) => ({
        outputPath: p.path,
        ...(p.k > 0 ? { referenceFilter: downscale(p.rung) } : {}),
      })),
      reference: probeReference(o.input, candidates, sample),
      workDir: o.workDir,
      threads: deps.threads,
      stallTimeoutMs: deps.stallTimeoutMs,
      signal: ctx.signal,
      log: ctx.log,
      vmafOnly: true,
      onProgress: (s) =>
        ctx.progress(from + ((to - from) / 2) * (1 + Math.min(1, s / sampleSeconds)), 'encode'),
    });
    const probes: RungProbe[] = [];
    for (const [k, rung] of candidates.entries()) {
      const points: ProbePoint[] = [];
      for (const [j, p] of outputs.entries()) {
        const score = measured[j]?.report.vmaf?.mean;
        if (p.k !== k || score === undefined) continue;
        const frames = await frameSizes(deps, ctx, p.path);
        const averageKbps = (frames.reduce((n, b) => n + b, 0) * 8) / 1000 / sampleSeconds;
        const peak = peakKbps(frames, o.input.video.frameRate || 25);
        const kbps = Math.max(averageKbps, peak);
        points.push({ crf: p.crf, kbps, averageKbps, peakKbps: peak, vmaf: score });
      }
      probes.push({ rung, points });
    }
    if (probes.every((p) => p.points.length === 0))
      return fixedLadder(o.input, o.encoder, 'the probe measured no VMAF');
    const encoded = defaultLadder(o.input.video, o.encoder);
    return chooseLadder(
      probes.map((p, k) => ({ ...p, rung: encoded[k] ?? p.rung })),
      o.encoder,
      sample,
    );
  } catch (error) {
    // A probe that fails (an input whose sample decodes to nothing, a metrics run that breaks)
    // costs the job its per-title rates, not the job: the encode may still succeed.
    if (ctx.signal.aborted) throw error;
    ctx.log.warn('stream.probe_failed', { error });
    return fixedLadder(o.input, o.encoder, 'the probe failed');
  } finally {
    await Promise.all(outputs.map((p) => rm(p.path, { force: true })));
  }
}

/** The sizes (bytes) of a probe file's video frames, in decode order (read, not decoded). */
async function frameSizes(
  deps: Pick<MediaJobDeps, 'runFfmpeg' | 'stallTimeoutMs'>,
  ctx: JobContext,
  path: string,
): Promise<number[]> {
  let text = '';
  await deps.runFfmpeg(
    [...inputArgs(path), '-map', '0:v:0', '-c', 'copy', '-f', 'framecrc', 'pipe:1'],
    {
      signal: ctx.signal,
      stallTimeoutMs: deps.stallTimeoutMs,
      onStdout: (chunk) => void (text += chunk.toString('latin1')),
    },
  );
  // framecrc: `stream, dts, pts, duration, size, crc` per packet; `#` lines are its header.
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => Number(line.split(',')[4]))
    .filter((n) => Number.isFinite(n));
}

/**
 * ffmpeg inputs of the sample: one per stretch, each seeking into the input (so only the
 * stretches are decoded, whatever the input's length), or the (trimmed) input itself when the
 * sample is all of it.
 */
export function sampleInputs(input: JobInput, sample: readonly Stretch[]): string[][] {
  const [only] = sample;
  if (sample.length === 1 && only?.startSeconds === 0) return [jobInputArgs(input)];
  const offset = input.trim?.startSeconds ?? 0;
  return sample.map((s) =>
    inputArgs(input.path, [
      '-ss',
      String(round3(offset + s.startSeconds)),
      '-t',
      String(s.seconds),
    ]),
  );
}

/**
 * The sample's stretches (inputs `first`…) joined and made into the top rung's picture, as the
 * ladder makes it, renumbered frame by frame at the nominal rate, so the probe's files and their
 * reference pair frame for frame whatever the input's timing.
 */
function sampleChain(input: JobInput, top: Rung, stretches: number, first: number): string {
  const rate = encodedFrameRate(input) ?? 25;
  const parts = Array.from({ length: stretches }, (_, k) => `[${first + k}:${input.video.index}]`);
  const joined =
    stretches > 1 ? `${parts.join('')}concat=n=${stretches}:v=1:a=0,` : (parts[0] ?? '');
  return `${joined}${pictureFilters(input, top, 'bicubic')},setpts=N/(${rate}*TB)`;
}

/** The probe's ffmpeg: the sample decoded once, split to every rung, each at both qualities. */
function probeArgs(
  input: JobInput,
  rungs: readonly Rung[],
  sample: readonly Stretch[],
  outputs: readonly { k: number; crf: number; path: string }[],
  threads: number,
): string[] {
  const top = rungs[0];
  if (!top) throw new Error('a ladder needs at least one rung');
  const inputs = sampleInputs(input, sample);
  const source = sampleChain(input, top, inputs.length, 0);
  const split = `${source},split=${rungs.length}${rungs.map((_, k) => `[s${k}]`).join('')}`;
  const branches = rungs.map((r, k) => {
    const scale = k === 0 ? '' : `${downscale(r)},`;
    const labels = PROBE_CRFS.map((c) => `[p${k}_${c}]`).join('');
    return `[s${k}]${scale}format=yuv420p,split=${PROBE_CRFS.length}${labels}`;
  });
  return [
    ...inputs.flat(),
    '-filter_complex',
    [split, ...branches].join(';'),
    ...outputs.flatMap((p) => [
      '-map',
      `[p${p.k}_${p.crf}]`,
      '-an',
      '-c:v',
      'libx264',
      '-preset',
      PROBE_PRESET,
      '-crf',
      String(p.crf),
      // Capped at twice the table's rate for the size (one second's buffer): a point above it
      // would only say "the ceiling", and x264's work grows with the bits (noise at CRF 20 took
      // 18 Mb/s at 720p and as much CPU as the whole ladder).
      '-maxrate',
      `${probeCap(rungs[p.k])}k`,
      '-bufsize',
      `${probeCap(rungs[p.k])}k`,
      '-fps_mode',
      'passthrough',
      ...BT709_OUTPUT_ARGS,
      '-threads',
      String(threads),
      '-y',
      p.path,
    ]),
  ];
}

/** The VBV cap of a size's probe encodes, kb/s: twice the fixed table's rate for the size. */
const probeCap = (rung: Rung | undefined): number => 2 * (rung?.bitrateKbps ?? 0);

/** What the probe's files are measured against: the sample at the top rung's picture. */
function probeReference(
  input: JobInput,
  rungs: readonly Rung[],
  sample: readonly Stretch[],
): QualityReference {
  const top = rungs[0];
  if (!top) throw new Error('a ladder needs at least one rung');
  const frameRate = encodedFrameRate(input) ?? 25;
  const inputs = sampleInputs(input, sample);
  return {
    inputs,
    chain: (first) => sampleChain(input, top, inputs.length, first),
    frameRate,
  };
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;
