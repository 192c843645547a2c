/**
 * The per-title ladder: each rung of the fixed table (ladder.ts) given the rate its picture needs
 * to reach a quality target, measured on this title rather than assumed. A probe encodes sampled
 * stretches of the input at every rung's size at two constant qualities, measures each with VMAF
 * against the stretches made into the rung's picture as the ladder makes it, fits the rung's
 * quality against its rate, and reads off the rate of the target. Rates stay between a floor and
 * the fixed table's rate for the size; a rung that adds nothing is dropped.
 */
import { join } from 'node:path';
import { stat, rm } from 'node:fs/promises';
import type { LadderChoice } from '../core/contracts/types.generated.ts';
import type { MediaJobDeps } from '../core/media-job/media-job.ts';
import { runEncode } from '../core/media-job/run-encode.ts';
import { measureQualities, type QualityTools } from '../core/media/measure-quality.ts';
import { encodedFrameRate, type QualityReference } from '../core/media/quality-args.ts';
import { BT709_OUTPUT_ARGS, pictureFilters } from '../core/media/picture-filters.ts';
import type { JobInput } from '../core/media/read-input.ts';
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
 * VMAF with this share of its bits (measured: bigbuckbunny 720p, 1700 kb/s two-pass slow 95.04
 * against veryfast CRF 20 at 1827 kb/s 93.71; see docs/benchmarks.md#per-title-ladder).
 */
export const LADDER_GAIN = 0.85;
/** No rung below this share of the fixed table's rate for its size, nor below FLOOR_KBPS. */
export const FLOOR_SHARE = 0.15;
export const FLOOR_KBPS = 100;
/**
 * A rung is dropped when the rung above it needs less than 1/STEP_RATIO times its bits: a player
 * that steps down to it saves too little to be worth a switch to a smaller picture.
 */
export const STEP_RATIO = 1.5;
/** Length of one sampled stretch, seconds. */
const STRETCH_SECONDS = 2;
/** The probe reads this share of the input (at least one stretch, at most MAX_SAMPLE_SECONDS). */
const SAMPLE_SHARE = 0.1;
const MAX_SAMPLE_SECONDS = 30;
/** VMAF of every n-th probe frame (the report's own setting is for the outputs). */
const PROBE_VMAF_SUBSAMPLE = 2;

/** One stretch of the input the probe reads: seconds from the (trimmed) input's start. */
export interface Stretch {
  startSeconds: number;
  seconds: number;
}

/**
 * The stretches the probe encodes: SAMPLE_SHARE of the input in stretches of STRETCH_SECONDS,
 * each in the middle of an equal share of the input (the whole input when it is shorter than
 * one stretch).
 */
export function sampleStretches(durationSeconds: number): Stretch[] {
  if (!(durationSeconds > STRETCH_SECONDS)) return [{ startSeconds: 0, seconds: durationSeconds }];
  const total = Math.min(
    MAX_SAMPLE_SECONDS,
    Math.max(STRETCH_SECONDS, durationSeconds * SAMPLE_SHARE),
  );
  const count = Math.max(1, Math.round(total / STRETCH_SECONDS));
  const share = durationSeconds / count;
  return Array.from({ length: count }, (_, k) => ({
    startSeconds: round3(share * (k + 0.5) - STRETCH_SECONDS / 2),
    seconds: STRETCH_SECONDS,
  }));
}

/** One probe encode of a rung: its constant quality, its rate over the sample, its VMAF. */
export interface ProbePoint {
  crf: number;
  kbps: number;
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
        points: d.points.map((p) => ({ crf: p.crf, kbps: round1(p.kbps), vmaf: round3(p.vmaf) })),
      })),
    } as LadderChoice,
  };
}

/** A rung at another average rate, its VBV scaled with it (peak 1.2×, one second's buffer). */
function withRate(rung: Rung, kbps: number): Rung {
  const peak = Math.round((rung.maxrateKbps / rung.bitrateKbps) * kbps);
  return { ...rung, bitrateKbps: kbps, maxrateKbps: peak, bufsizeKbps: peak };
}

/** The fixed table, and why it was kept when the probe could not run (no VMAF tool). */
function fixedLadder(input: JobInput, encoder: LadderEncoder, why: string): PerTitleLadder {
  return { rungs: defaultLadder(input.video, encoder), choice: { mode: 'fixed', reason: why } };
}

/**
 * Runs the probe on the job's input and chooses the per-title ladder (see chooseLadder). The
 * probe is one ffmpeg that decodes the sample once and encodes every rung at both qualities,
 * then one metrics ffmpeg for all of them; its files are removed afterwards. Without a VMAF
 * tool the fixed table is used, and the choice says why.
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
      onProgress: (s) =>
        ctx.progress(
          from + ((to - from) / 2) * (1 + Math.min(1, s / sampleSeconds / outputs.length)),
          'encode',
        ),
    });
    const probes: RungProbe[] = [];
    for (const [k, rung] of candidates.entries()) {
      const points: ProbePoint[] = [];
      for (const [j, p] of outputs.entries()) {
        const score = measured[j]?.report.vmaf?.mean;
        if (p.k !== k || score === undefined) continue;
        const bytes = (await stat(p.path)).size;
        points.push({ crf: p.crf, kbps: (bytes * 8) / 1000 / sampleSeconds, vmaf: score });
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
  } finally {
    await Promise.all(outputs.map((p) => rm(p.path, { force: true })));
  }
}

/** The sample made into the top rung's picture, as the ladder makes it, at the probe's times. */
function sampleChain(
  input: JobInput,
  top: Rung,
  sample: readonly Stretch[],
  label: string,
): string {
  const rate = encodedFrameRate(input) ?? 25;
  const within = sample
    .map((s) => `between(t\\,${s.startSeconds}\\,${round3(s.startSeconds + s.seconds)})`)
    .join('+');
  // Renumbered frame by frame at the nominal rate, so the probe's files and the reference
  // pair frame for frame whatever the input's timing.
  return `${label}${pictureFilters(input, top, 'bicubic')},setpts=PTS-STARTPTS,select='${within}',setpts=N/(${rate}*TB)`;
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
  const source = sampleChain(input, top, sample, `[0:${input.video.index}]`);
  const split = `${source},split=${rungs.length}${rungs.map((_, k) => `[s${k}]`).join('')}`;
  const branches = rungs.map((r, k) => {
    const scale = k === 0 ? '' : `${downscale(r)},`;
    const labels = PROBE_CRFS.map((c) => `[p${k}_${c}]`).join('');
    return `[s${k}]${scale}format=yuv420p,split=${PROBE_CRFS.length}${labels}`;
  });
  return [
    ...jobInputArgs(input),
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

/** What the probe's files are measured against: the sample at the top rung's picture. */
function probeReference(
  input: JobInput,
  rungs: readonly Rung[],
  sample: readonly Stretch[],
): QualityReference {
  const top = rungs[0];
  if (!top) throw new Error('a ladder needs at least one rung');
  const frameRate = encodedFrameRate(input) ?? 25;
  return {
    inputs: [jobInputArgs(input)],
    chain: (first) => sampleChain(input, top, sample, `[${first}:${input.video.index}]`),
    frameRate,
  };
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;
