import type { TranscodeSpec } from '../core/contracts/types.generated.ts';
import type { PreparedWatermark } from '../core/watermarks/prepare-watermark.ts';
import type { OutputSize } from '../core/media/output-size.ts';
import { audioEncoderArgs, audioFormatFilter } from '../core/media/audio-format.ts';
import { BT709_OUTPUT_ARGS, pictureFilters } from '../core/media/picture-filters.ts';
import type { JobInput } from '../core/media/read-input.ts';
import { inputArgs } from '../core/media/run-ffmpeg.ts';

export { outputSize, type OutputSize } from '../core/media/output-size.ts';

function videoCodecArgs(spec: TranscodeSpec, kbps: number): string[] {
  const rate = [`-b:v`, `${kbps}k`];
  switch (spec.encoder) {
    case 'h264':
      return [
        '-c:v',
        'libx264',
        '-preset',
        'medium',
        ...rate,
        '-maxrate',
        `${Math.round(kbps * 1.5)}k`,
        '-bufsize',
        `${kbps * 2}k`,
        '-profile:v',
        'high',
      ];
    case 'h265':
      return [
        '-c:v',
        'libx265',
        '-preset',
        'fast',
        ...rate,
        '-x265-params',
        'log-level=error',
        ...(spec.container === 'mp4' ? ['-tag:v', 'hvc1'] : []),
      ];
    case 'vp8':
      return [
        '-c:v',
        'libvpx',
        '-deadline',
        'good',
        '-cpu-used',
        '2',
        ...rate,
        '-maxrate',
        `${Math.round(kbps * 1.5)}k`,
      ];
    case 'vp9':
      // Single-pass VBR misses by -35 %..+12 % (a 0.9-1.1 range: +12 % at 2000k); CBR lands within
      // about 5 % at 1000-4000k on a noisy 720p clip (bench/transcode-overhead.ts).
      return [
        '-c:v',
        'libvpx-vp9',
        '-deadline',
        'good',
        '-cpu-used',
        '4',
        '-row-mt',
        '1',
        ...rate,
        '-minrate',
        `${kbps}k`,
        '-maxrate',
        `${kbps}k`,
      ];
  }
}

/** ffmpeg arguments (after the global ones) for one transcode; a pure function of its inputs. */
export function buildTranscodeArgs(options: {
  spec: TranscodeSpec;
  input: JobInput;
  outputPath: string;
  size: OutputSize;
  threads: number;
  watermark?: PreparedWatermark;
}): string[] {
  const { spec, size, input } = options;
  const kbps = Number(spec.bitrateKbps);
  const picture = `[0:${input.video.index}]${pictureFilters(input, size, 'bicubic')}`;
  const graph = options.watermark
    ? `${picture}[in];${options.watermark.filter(1)};[out]format=yuv420p[v]`
    : `${picture},format=yuv420p[v]`;
  const audio = input.info.audio;
  const encoder = spec.container === 'webm' ? 'opus' : 'aac';
  return [
    ...inputArgs(input.path),
    ...(options.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? []),
    '-filter_complex',
    graph,
    '-map',
    '[v]',
    ...(audio
      ? [
          '-map',
          `0:${audio.index}`,
          '-af',
          audioFormatFilter(audio, encoder),
          ...audioEncoderArgs(audio, encoder),
        ]
      : ['-an']),
    ...videoCodecArgs(spec, kbps),
    ...BT709_OUTPUT_ARGS,
    '-threads',
    String(options.threads),
    '-map_metadata',
    '-1',
    ...muxerArgs(spec),
    '-y',
    options.outputPath,
  ];
}

/** VP8 in mp4 is written as Matroska first and remuxed (ffmpeg's mp4 muxer refuses VP8). */
export function needsRemux(spec: Pick<TranscodeSpec, 'encoder' | 'container'>): boolean {
  return spec.encoder === 'vp8' && spec.container === 'mp4';
}

function muxerArgs(spec: TranscodeSpec): string[] {
  if (needsRemux(spec)) return ['-f', 'matroska'];
  return spec.container === 'mp4' ? ['-movflags', '+faststart', '-f', 'mp4'] : ['-f', 'webm'];
}
