import type { OutputSize } from './output-size.ts';
import { BT709_TAGS, pictureFilters } from './picture-filters.ts';
import type { JobInput } from './read-input.ts';
import { inputArgs } from './run-ffmpeg.ts';
import { safePath } from './safe-path.ts';
import { jobInputArgs } from './trim.ts';

/** The model every VMAF score of the service is given with. */
export const VMAF_MODEL = 'vmaf_v0.6.1';

/**
 * How to make the pictures an output is measured against: the decoded input at the output's
 * geometry, made as the encode made it (a transcode's or a ladder rung's scaled input, a
 * summary's clips joined), without what the encode laid over it (a watermark).
 */
export interface QualityReference {
  /** ffmpeg input arguments, each ending in `-i <file>` (inputArgs, partsListInput). */
  inputs: readonly (readonly string[])[];
  /**
   * A filter chain from those inputs, numbered from `first` (the outputs measured are the inputs
   * before it), ending in one unlabelled video output: e.g. `[1:0]scale=640:360`.
   */
  chain: (first: number) => string;
  /**
   * Frames per second the outputs were encoded at (the encoder's time base, one over the
   * input's nominal rate): both sides' times are put on its grid before frames are paired, so a
   * frame stored a fraction of its length off its time (WebM keeps whole milliseconds, and an
   * Opus pre-roll moves the video's start: 33 ms against the reference's 33.3) pairs with its
   * own reference frame and not the one before. Unset: frames pair by their times as they are.
   */
  frameRate?: number;
}

/** Where the metrics ffmpeg writes its per-frame figures. */
export interface QualityLogs {
  /** psnr's stats file; unset: no PSNR (a VMAF-only measurement). */
  psnr?: string;
  /** ssim's stats file; unset: no SSIM. */
  ssim?: string;
  /** libvmaf's CSV log; unset: no VMAF (an ffmpeg without libvmaf). */
  vmaf?: string;
}

/** One output measured against the shared reference, and where its figures go. */
export interface QualityTarget {
  outputPath: string;
  logs: QualityLogs;
  /**
   * Filters the decoded output passes before it is compared: a GIF's `fps=12`, so frames whose
   * times its centisecond clock rounded pair with the reference frame of the same instant.
   */
  outputFilter?: string;
  /**
   * Filters taking the shared reference to this output's geometry (a lower ladder rung's scale);
   * unset: the reference is at it already.
   */
  referenceFilter?: string;
}

export interface QualityArgsOptions {
  /** The outputs, inputs 0…n−1 of the run, the reference's inputs after them. */
  targets: readonly QualityTarget[];
  reference: QualityReference;
  /** Score every n-th frame with VMAF (1: every frame). */
  vmafSubsample: number;
  threads: number;
}

/**
 * The reference of an output made from a job's input with pictureFilters at `size` (a transcode,
 * a ladder rung): the same filters, so the same deinterlacing, rotation, tone map and scaling.
 */
export function inputReference(input: JobInput, size: OutputSize): QualityReference {
  const frameRate = encodedFrameRate(input);
  return {
    inputs: [jobInputArgs(input)],
    chain: (first) => `[${first}:${input.video.index}]${pictureFilters(input, size, 'bicubic')}`,
    ...(frameRate ? { frameRate } : {}),
  };
}

/** The rate ffmpeg encodes the input's frames at (its nominal rate), when the probe knows it. */
export function encodedFrameRate(input: JobInput): number | undefined {
  const rate = input.video.nominalFrameRate || input.video.frameRate;
  return rate > 0 ? rate : undefined;
}

/**
 * Times from 0, on the grid of `frameRate` frames a second when there is one: in microseconds on
 * both sides, whatever each file's time base, so that the same slot is the same number.
 */
function fromZero(frameRate: number | undefined): string {
  if (!frameRate) return 'setpts=PTS-STARTPTS';
  return `settb=AVTB,setpts=round((PTS-STARTPTS)*TB*${frameRate})/(${frameRate}*TB)`;
}

/**
 * One ffmpeg for every metric of every target, so each file is decoded once (a whole ladder's
 * reference too): the reference is made once and split to the targets, each branch through the
 * target's referenceFilter; each output passes through psnr, ssim and libvmaf in turn (each
 * passes its first input on unchanged), its branch split to the three. Both sides start at 0 (on
 * the reference's frame grid, when it has one) and are 8-bit 4:2:0 like every output, so frames
 * pair by timestamp and the filters compare like with like.
 */
export function qualityArgs(o: QualityArgsOptions): string[] {
  const n = o.targets.length;
  if (n === 0) throw new Error('a quality measurement needs an output');
  const shared = `${o.reference.chain(n)},${fromZero(o.reference.frameRate)}`;
  const graph = [
    fanOut(
      shared,
      o.targets.map((_, k) => `[b${k}]`),
    ),
    ...o.targets.flatMap((t, k) => targetGraph(o, t, k)),
  ];
  return [
    ...o.targets.flatMap((t) => inputArgs(t.outputPath)),
    ...o.reference.inputs.flat(),
    '-filter_complex',
    graph.join(';'),
    ...o.targets.flatMap((t, k) => ['-map', `[d${k}_${metricFilters(o, t).length}]`]),
    '-threads',
    String(o.threads),
    '-f',
    'null',
    '-',
  ];
}

/** `source` into each label: through `split` when there are several. */
function fanOut(source: string, labels: readonly string[]): string {
  const split = labels.length > 1 ? `,split=${labels.length}` : '';
  return `${source}${split}${labels.join('')}`;
}

/** Target `k`'s part of the graph: its output, its reference branch, one link per metric. */
function targetGraph(o: QualityArgsOptions, t: QualityTarget, k: number): string[] {
  const metrics = metricFilters(o, t);
  const output = `[${k}:v:0]${t.outputFilter ? `${t.outputFilter},` : ''}`;
  // Both sides carry the same colour tags: the libvmaf ffmpeg (9.x) negotiates colour spaces
  // and would convert one side whose tags differ (an output read untagged, a reference tagged
  // BT.709): 4 dB of PSNR lost to a conversion that is not in the output.
  const reference = `[b${k}]${t.referenceFilter ? `${t.referenceFilter},` : ''}format=yuv420p,${BT709_TAGS}`;
  return [
    `${output}format=yuv420p,${BT709_TAGS},${fromZero(o.reference.frameRate)}[d${k}_0]`,
    fanOut(
      reference,
      metrics.map((_, i) => `[r${k}_${i}]`),
    ),
    ...metrics.map((m, i) => `[d${k}_${i}][r${k}_${i}]${m}[d${k}_${i + 1}]`),
  ];
}

/** What a target is measured with, in the order its output passes them. */
function metricFilters(o: QualityArgsOptions, t: QualityTarget): string[] {
  const { psnr, ssim, vmaf } = t.logs;
  return [
    ...(psnr === undefined ? [] : [`psnr=stats_file=${safePath(psnr)}`]),
    ...(ssim === undefined ? [] : [`ssim=stats_file=${safePath(ssim)}`]),
    ...(vmaf === undefined ? [] : [vmafFilter(o, vmaf)]),
  ];
}

function vmafFilter(o: QualityArgsOptions, log: string): string {
  return [
    `libvmaf=model=version=${VMAF_MODEL}`,
    `n_threads=${o.threads}`,
    `n_subsample=${o.vmafSubsample}`,
    'log_fmt=csv',
    `log_path=${safePath(log)}`,
  ].join(':');
}
