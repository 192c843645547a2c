import { createReadStream } from 'node:fs';
import type { MediaInfo } from '../core/media/probe-media.ts';
import { inputArgs, type FfmpegRunner } from '../core/media/run-ffmpeg.ts';
import { detectCuts } from './detect-scenes.ts';
import {
  ANALYSIS_HEIGHT,
  ANALYSIS_WIDTH,
  createFrameChangeReader,
  type FrameChange,
} from './frame-features.ts';
import type { Timeline } from './select-segments.ts';

/** Analysis samples per second of input. */
export const SAMPLES_PER_SECOND = 2;
/** Sample rate of the mono audio the loudness is measured on, in Hz: energy needs no more. */
export const AUDIO_RATE = 4000;
/** How much loudness (0 to 1, relative to the loudest moment) counts against motion (0 to 1). */
export const AUDIO_WEIGHT = 0.1;

export interface AnalysisDeps {
  runFfmpeg: FfmpegRunner;
  stallTimeoutMs: number;
}

export interface AnalysisOptions {
  inputPath: string;
  input: MediaInfo;
  /** Where the loudness pass writes its raw samples (a file in the job's directory). */
  audioPath: string;
  threads: number;
  signal: AbortSignal;
  /** Share of the input analysed, 0 to 1. */
  onProgress?: (fraction: number) => void;
}

/**
 * Decoder shortcuts for the analysis only: no deblocking, and no B-frames in H.264 (x264's
 * B-frames reference nothing a P-frame needs; skipping them costs 10.5 s instead of 15.1 s for
 * non-reference frames only, against 40.7 s for a full decode of a 588 s 720p input). HEVC
 * encoders use B-frames as references, so only non-reference frames go there.
 */
function decoderShortcuts(codec: string | undefined): string[] {
  if (codec === 'h264') return ['-skip_loop_filter', 'all', '-skip_frame', 'bidir'];
  if (codec === 'hevc') return ['-skip_loop_filter', 'all', '-skip_frame', 'noref'];
  return [];
}

/**
 * One decode of the input: video sampled at 2 frames/s (`round=up`: the default rounding shifts
 * every sample by a quarter of a second), scaled to 64×36 rgb24 on stdout; audio, where there
 * is some, as 4 kHz mono s16le into a file.
 */
export function analysisArgs(o: {
  inputPath: string;
  codec: string | undefined;
  audioPath?: string;
  threads: number;
}): string[] {
  return [
    '-threads',
    String(o.threads),
    ...decoderShortcuts(o.codec),
    ...inputArgs(o.inputPath),
    '-map',
    '0:v:0',
    '-vf',
    `fps=${SAMPLES_PER_SECOND}:round=up,scale=${ANALYSIS_WIDTH}:${ANALYSIS_HEIGHT}:flags=area`,
    '-f',
    'rawvideo',
    '-pix_fmt',
    'rgb24',
    'pipe:1',
    ...(o.audioPath
      ? ['-map', '0:a:0', '-ac', '1', '-ar', String(AUDIO_RATE), '-f', 's16le', '-y', o.audioPath]
      : []),
  ];
}

/** The input's timeline: per-sample activity (motion, plus loudness where there is audio) and its cuts. */
export async function analyseVideo(deps: AnalysisDeps, o: AnalysisOptions): Promise<Timeline> {
  const changes: FrameChange[] = [];
  const duration = o.input.durationSeconds;
  const args = analysisArgs({
    inputPath: o.inputPath,
    codec: o.input.video?.codec,
    threads: o.threads,
    ...(o.input.audio ? { audioPath: o.audioPath } : {}),
  });
  await deps.runFfmpeg(args, {
    signal: o.signal,
    stallTimeoutMs: deps.stallTimeoutMs,
    onStdout: createFrameChangeReader((change) => changes.push(change)),
    onProgress: (p) => o.onProgress?.(Math.min(1, p.outTimeSeconds / (duration || 1))),
  });
  const loudness = o.input.audio ? await readLoudness(o.audioPath, changes.length) : [];
  const activity = changes.map((c, i) => c.motion + AUDIO_WEIGHT * (loudness[i] ?? 0));
  return {
    durationSeconds: duration,
    sampleSeconds: 1 / SAMPLES_PER_SECOND,
    activity,
    cuts: detectCuts(changes),
  };
}

/**
 * RMS of each half second of the raw audio, relative to the loudest (0 to 1), one per video
 * sample: the value for sample i is the half second that ends at it. Streamed, never whole.
 */
async function readLoudness(path: string, samples: number): Promise<number[]> {
  const perWindow = AUDIO_RATE / SAMPLES_PER_SECOND;
  const rms: number[] = [0];
  let sum = 0;
  let count = 0;
  let carry: Buffer | undefined;
  for await (const data of createReadStream(path)) {
    let chunk = data as Buffer;
    if (carry) chunk = Buffer.concat([carry, chunk]);
    const even = chunk.length - (chunk.length % 2);
    for (let i = 0; i < even; i += 2) {
      const v = chunk.readInt16LE(i) / 32768;
      sum += v * v;
      if (++count === perWindow) {
        rms.push(Math.sqrt(sum / count));
        sum = 0;
        count = 0;
      }
    }
    carry = even < chunk.length ? chunk.subarray(even) : undefined;
  }
  if (count > 0) rms.push(Math.sqrt(sum / count));
  const kept = rms.slice(0, samples);
  const loudest = kept.reduce((a, b) => Math.max(a, b), 1e-6);
  return kept.map((r) => r / loudest);
}
