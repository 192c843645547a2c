import type { TranscodeSpec } from '../core/contracts/types.generated.ts';
import type { PreparedWatermark } from '../core/watermarks/prepare-watermark.ts';
import type { OutputSize } from '../core/media/output-size.ts';
import { audioEncoderArgs, audioFormatFilter } from '../core/media/audio-format.ts';
import { BT709_OUTPUT_ARGS, pictureFilters } from '../core/media/picture-filters.ts';
import type { JobInput } from '../core/media/read-input.ts';
import { inputArgs } from '../core/media/run-ffmpeg.ts';
import { jobInputArgs } from '../core/media/trim.ts';
import { passArgs } from '../core/media/two-pass.ts';
import { libvpxBudgetKbps, videoCodecArgs } from './rate-control.ts';
import {
  burnInFilter,
  captionInputs,
  captionOutputArgs,
  type TranscodeCaptions,
} from './caption-args.ts';

export { outputSize, type OutputSize } from '../core/media/output-size.ts';
export {
  PEAK_FACTOR,
  BUFFER_SECONDS,
  correctedTargetKbps,
  firstPassShare,
} from './rate-control.ts';

/** What one transcode is made of; everything a run's arguments depend on. */
export interface TranscodeOptions {
  spec: TranscodeSpec;
  input: JobInput;
  /** The final pass's output file. */
  outputPath: string;
  size: OutputSize;
  /** ffmpeg `-threads` of every pass (the job's share of the cores). */
  threads: number;
  /**
   * Path prefix, inside the job's work dir, of the first pass's statistics files (ffmpeg adds
   * `-0.log`, x264 also `.mbtree`, x265 `.cutree`). No `:` or `=`: x265 reads it from a
   * `key=value:…` list.
   */
  passLogPrefix: string;
  watermark?: PreparedWatermark;
  /**
   * The rate given to the encoder, kb/s, when it is not the request's `bitrateKbps` (a final
   * pass run again after an overshoot, see correctedTargetKbps).
   */
  targetKbps?: number;
  /** The audio's loudness filter, when the request asked for a loudness (loudness.ts). */
  loudnessFilter?: string;
  /**
   * The output's soft caption tracks and the one burned in (caption-args.ts); none: no captions.
   * With VP8 in MP4 only the burn-in is the encode's: the remux adds the soft tracks.
   */
  captions?: TranscodeCaptions;
}

/**
 * The ffmpeg runs (arguments after the global ones) of one transcode, in the order they must
 * run: a first pass that only analyses the picture (null output, no audio), then the pass that
 * writes `outputPath`. A pure function of its inputs. Rate control per encoder, its peak bound
 * and the measurements behind each choice: `rate-control.ts`.
 */
export function buildTranscodeArgs(options: TranscodeOptions): string[][] {
  return [firstPass(options), finalPass(options)];
}

/** The final pass alone, run again at `targetKbps` from the first pass's statistics. */
export function retryFinalPass(options: TranscodeOptions, targetKbps: number): string[] {
  return finalPass({ ...options, targetKbps });
}

function firstPass(o: TranscodeOptions): string[] {
  return [
    ...pictureInput(o, []),
    '-an',
    ...videoArgs(o, 1),
    // The muxer is never written: the pass only leaves its statistics in the work dir.
    '-f',
    'null',
    '-',
  ];
}

function finalPass(o: TranscodeOptions): string[] {
  const audio = o.input.info.audio;
  const encoder = o.spec.container === 'webm' ? 'opus' : 'aac';
  // VP8 in MP4: the remux writes the soft tracks (remux-to-mp4.ts), not the Matroska encode.
  const tracks = needsRemux(o.spec) ? [] : (o.captions?.tracks ?? []);
  const firstCaption = 1 + (o.watermark?.inputs.length ?? 0);
  return [
    ...pictureInput(o, captionInputs(tracks)),
    ...(audio
      ? [
          '-map',
          `0:${audio.index}`,
          '-af',
          audioFormatFilter(audio, encoder, o.loudnessFilter),
          ...audioEncoderArgs(audio, encoder),
        ]
      : ['-an']),
    ...videoArgs(o, 2),
    ...captionOutputArgs(tracks, o.spec.container, firstCaption),
    '-map_metadata',
    '-1',
    ...muxerArgs(o.spec),
    '-y',
    o.outputPath,
  ];
}

/**
 * Both passes must see the same picture (watermark and burned-in captions included), or the
 * statistics mislead. The captions are drawn below the watermark, which stays on top. Inputs come
 * first (`-map` before an `-i` would be taken as that input's option): the job's input, the
 * watermark's, then `moreInputs`.
 */
function pictureInput(o: TranscodeOptions, moreInputs: string[]): string[] {
  const burnIn = o.captions?.burnIn ? `,${burnInFilter(o.captions.burnIn, o.size.height)}` : '';
  const picture = `[0:${o.input.video.index}]${pictureFilters(o.input, o.size, 'bicubic')}${burnIn}`;
  const graph = o.watermark
    ? `${picture}[in];${o.watermark.filter(1)};[out]format=yuv420p[v]`
    : `${picture},format=yuv420p[v]`;
  return [
    ...jobInputArgs(o.input),
    ...(o.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? []),
    ...moreInputs,
    '-filter_complex',
    graph,
    '-map',
    '[v]',
  ];
}

function videoArgs(o: TranscodeOptions, pass: 1 | 2): string[] {
  const target = o.targetKbps ?? Number(o.spec.bitrateKbps);
  const libvpx = o.spec.encoder === 'vp8' || o.spec.encoder === 'vp9';
  const kbps =
    libvpx && fpsMode(o.spec) === 'vfr' ? libvpxBudgetKbps(target, o.input.video) : target;
  return [
    ...videoCodecArgs(o.spec, kbps, {
      ...o.size,
      frameRate: o.input.video.frameRate,
      variableFrameRate: o.input.video.variableFrameRate,
    }),
    ...passArgs(o.spec.encoder, pass, o.passLogPrefix),
    '-fps_mode:v',
    fpsMode(o.spec),
    ...(o.spec.encoder === 'h265' && o.spec.container === 'mp4' ? ['-tag:v', 'hvc1'] : []),
    ...BT709_OUTPUT_ARGS,
    '-threads',
    String(o.threads),
  ];
}

/**
 * What ffmpeg's automatic choice is for the final pass's muxer, said explicitly on both passes:
 * the null muxer of the first pass would pass timestamps through, and on a variable-frame-rate
 * input the passes would then see different frame counts (x264 refuses a second pass with more
 * frames than the first: "ffmpeg could not process this input" on a screen recording of stills).
 * MP4 gets constant frame rate (frames duplicated or dropped to it), WebM and Matroska keep the
 * input's timing.
 */
function fpsMode(spec: TranscodeSpec): 'cfr' | 'vfr' {
  return spec.container === 'mp4' && !needsRemux(spec) ? 'cfr' : 'vfr';
}

/** VP8 in mp4 is written as Matroska first and remuxed (ffmpeg's mp4 muxer refuses VP8). */
export function needsRemux(spec: Pick<TranscodeSpec, 'encoder' | 'container'>): boolean {
  return spec.encoder === 'vp8' && spec.container === 'mp4';
}

function muxerArgs(spec: TranscodeSpec): string[] {
  if (needsRemux(spec)) return ['-f', 'matroska'];
  return spec.container === 'mp4' ? ['-movflags', '+faststart', '-f', 'mp4'] : ['-f', 'webm'];
}
