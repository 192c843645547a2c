import type { OutputSize } from './output-size.ts';
import { pictureFilters } from './picture-filters.ts';
import type { JobInput } from './read-input.ts';
import { inputArgs } from './run-ffmpeg.ts';
import { safePath } from './safe-path.ts';

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
   * A filter chain from those inputs, numbered from `first` (the output is input 0), ending in
   * one unlabelled video output: e.g. `[1:0]scale=640:360`.
   */
  chain: (first: number) => string;
}

/** Where the metrics ffmpeg writes its per-frame figures. */
export interface QualityLogs {
  psnr: string;
  ssim: string;
  /** libvmaf's CSV log; unset: no VMAF (an ffmpeg without libvmaf). */
  vmaf?: string;
}

export interface QualityArgsOptions {
  outputPath: string;
  reference: QualityReference;
  logs: QualityLogs;
  /** Score every n-th frame with VMAF (1: every frame). */
  vmafSubsample: number;
  threads: number;
  /**
   * Filters the decoded output passes before it is compared: a GIF's `fps=12`, so frames whose
   * times its centisecond clock rounded pair with the reference frame of the same instant.
   */
  outputFilter?: string;
}

/**
 * The reference of an output made from a job's input with pictureFilters at `size` (a transcode,
 * a ladder rung): the same filters, so the same deinterlacing, rotation, tone map and scaling.
 */
export function inputReference(input: JobInput, size: OutputSize): QualityReference {
  return {
    inputs: [inputArgs(input.path)],
    chain: (first) => `[${first}:${input.video.index}]${pictureFilters(input, size, 'bicubic')}`,
  };
}

/**
 * One ffmpeg for every metric of an output, so each side is decoded once: the output passes
 * through psnr, ssim and libvmaf in turn (each passes its first input on unchanged), the
 * reference is split to the three. Both sides start at 0 and are 8-bit 4:2:0 like every output,
 * so frames pair by timestamp and the filters compare like with like.
 */
export function qualityArgs(o: QualityArgsOptions): string[] {
  const uses = o.logs.vmaf === undefined ? 2 : 3;
  const refs = Array.from({ length: uses }, (_, k) => `[r${k}]`);
  const graph = [
    `[0:v:0]${o.outputFilter ? `${o.outputFilter},` : ''}format=yuv420p,setpts=PTS-STARTPTS[d0]`,
    `${o.reference.chain(1)},format=yuv420p,setpts=PTS-STARTPTS,split=${uses}${refs.join('')}`,
    `[d0][r0]psnr=stats_file=${safePath(o.logs.psnr)}[d1]`,
    `[d1][r1]ssim=stats_file=${safePath(o.logs.ssim)}[d2]`,
    ...(o.logs.vmaf === undefined ? [] : [`[d2][r2]${vmafFilter(o, o.logs.vmaf)}[d3]`]),
  ];
  return [
    ...inputArgs(o.outputPath),
    ...o.reference.inputs.flat(),
    '-filter_complex',
    graph.join(';'),
    '-map',
    `[d${uses}]`,
    '-threads',
    String(o.threads),
    '-f',
    'null',
    '-',
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
