import { open } from 'node:fs/promises';
import { MediaError } from '../core/errors.ts';
import { inputArgs, rawFramesInput } from '../core/media/run-ffmpeg.ts';
import type { PreparedWatermark } from '../core/watermarks/prepare-watermark.ts';
import type { OutputSize } from '../core/media/output-size.ts';
import { SAMPLES_PER_SECOND, type AnalysisPart } from './analysis-parts.ts';

/**
 * A GIF's palette comes from frames the analysis samples anyway (2 per second, see
 * analyse-video.ts), kept small: the ones inside the chosen segments go to `palettegen`. So no
 * pass decodes the chosen clips a second time at full size for the palette, a GIF can be
 * rendered in parts with one palette, and it comes out as close to its source as with a
 * full-size palette pass or closer (docs/benchmarks.md, "Summary speed", has the figures).
 */
export const PALETTE_SAMPLE_WIDTH = 160;
/** Most bytes the samples of one input may take on disk (a 10-minute 16:9 input takes 52 MB). */
export const PALETTE_SAMPLES_MAX_BYTES = 64 * 1024 * 1024;

/** The size of the palette samples of an input, and where each part of the analysis writes them. */
export interface PaletteSamples {
  width: number;
  height: number;
  /** One raw rgb24 file per analysis part, in the parts' order. */
  paths: string[];
  parts: AnalysisPart[];
}

/**
 * Samples PALETTE_SAMPLE_WIDTH wide (never wider than the input), the aspect ratio kept, made
 * smaller for a long input so that all of them fit in PALETTE_SAMPLES_MAX_BYTES.
 */
export function paletteSampleSize(
  video: { width: number; height: number },
  durationSeconds: number,
): { width: number; height: number } {
  const samples = Math.ceil(Math.max(0, durationSeconds) * SAMPLES_PER_SECOND) + 1;
  const width = Math.max(1, Math.min(PALETTE_SAMPLE_WIDTH, video.width));
  const height = Math.max(1, Math.round((width * video.height) / Math.max(1, video.width)));
  const fits = Math.min(1, Math.sqrt(PALETTE_SAMPLES_MAX_BYTES / (samples * width * height * 3)));
  return {
    width: Math.max(1, Math.floor(width * fits)),
    height: Math.max(1, Math.floor(height * fits)),
  };
}

/**
 * Most frames one part's samples file takes: the input's share of PALETTE_SAMPLES_MAX_BYTES, so
 * the files stay bounded even when the container's duration is wrong.
 */
export function maxSampleFrames(
  size: { width: number; height: number },
  partCount: number,
): number {
  return Math.max(
    1,
    Math.floor(PALETTE_SAMPLES_MAX_BYTES / Math.max(1, partCount) / (size.width * size.height * 3)),
  );
}

/**
 * Copies the samples shown inside the segments (sample i, at i / SAMPLES_PER_SECOND s, in
 * [start, end)) into one raw file, one frame at a time; returns how many. A later part's files
 * open with its lead sample (see LEAD); samples a part did not write are left out.
 */
export async function collectPaletteSamples(
  samples: PaletteSamples,
  segments: readonly { startSeconds: number; endSeconds: number }[],
  outPath: string,
): Promise<number> {
  const frameBytes = samples.width * samples.height * 3;
  const wanted = new Set<number>();
  for (const s of segments)
    for (
      let i = Math.ceil(s.startSeconds * SAMPLES_PER_SECOND - 1e-6);
      i < s.endSeconds * SAMPLES_PER_SECOND - 1e-6;
      i++
    )
      wanted.add(i);
  const out = await open(outPath, 'w');
  const frame = Buffer.alloc(frameBytes);
  let written = 0;
  try {
    for (const [k, part] of samples.parts.entries()) {
      const first = Math.round(part.startSeconds * SAMPLES_PER_SECOND);
      const end =
        part.seconds === undefined
          ? Infinity
          : first + Math.round(part.seconds * SAMPLES_PER_SECOND);
      const lead = k > 0 ? 1 : 0;
      const indices = [...wanted].filter((i) => i >= first && i < end).sort((a, b) => a - b);
      if (indices.length === 0) continue;
      const file = await open(samples.paths[k] ?? '', 'r');
      try {
        for (const i of indices) {
          const { bytesRead } = await file.read(
            frame,
            0,
            frameBytes,
            (i - first + lead) * frameBytes,
          );
          if (bytesRead < frameBytes) break;
          await out.write(frame, 0, frameBytes);
          written++;
        }
      } finally {
        await file.close();
      }
    }
  } finally {
    await out.close();
  }
  if (written === 0)
    throw new MediaError('transcode_failed', 'the input gave no frames to make a GIF palette of');
  return written;
}

/**
 * The palette step: `palettegen` over the collected samples (stats_mode=full: samples half a
 * second apart tell nothing a frame-to-frame difference would; `diff` came out 0.1 dB worse and
 * up to 3 % larger). A watermark is drawn on the samples scaled to the output's size first, so
 * its colours are in the palette.
 */
export function paletteFromSamplesArgs(o: {
  samplesPath: string;
  sampleSize: { width: number; height: number };
  size: OutputSize;
  watermark?: PreparedWatermark;
  palettePath: string;
}): string[] {
  const watermarked = o.watermark
    ? `scale=${o.size.width}:${o.size.height}:flags=neighbor,setsar=1[in];${o.watermark.filter(1)};[out]`
    : '';
  return [
    ...rawFramesInput(o.samplesPath, o.sampleSize, SAMPLES_PER_SECOND),
    ...(o.watermark?.inputs.flatMap((i) => inputArgs(i)) ?? []),
    '-threads',
    '1',
    '-filter_complex',
    `[0:v]${watermarked}palettegen=stats_mode=full[v]`,
    '-map',
    '[v]',
    '-frames:v',
    '1',
    '-update',
    '1',
    '-f',
    'image2',
    '-y',
    o.palettePath,
  ];
}
