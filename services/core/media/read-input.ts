import { join } from 'node:path';
import { MediaError } from '../errors.ts';
import { textSubtitleStreams } from './captions.ts';
import { fieldParity } from './detect-interlace.ts';
import type { MediaInfo, VideoInfo } from './media-info.ts';
import type { PicturePlan } from './picture-filters.ts';
import { checkInputPixels } from './pixel-budget.ts';
import type { Prober } from './probe-media.ts';
import { inputArgs, type FfmpegRunner } from './run-ffmpeg.ts';
import type { InputTrim } from './trim.ts';

/** A job's input as every later step uses it: where to read it and what it is. */
export interface JobInput extends PicturePlan {
  /** The file to read: the download, or its remux when its timeline needed one. */
  path: string;
  info: MediaInfo & { video: VideoInfo };
  /**
   * The part of the input the job uses (trim.ts, trimmedInput): `info`'s lengths are then the
   * part's, and every ffmpeg reads the input with jobInputArgs.
   */
  trim?: InputTrim;
}

export interface ReadInputDeps {
  probe: Prober;
  runFfmpeg: FfmpegRunner;
  stallTimeoutMs: number;
  maxPixels: number;
}

/**
 * Reads the downloaded input once into the model every step works from: probed, refused when it
 * has no video or is over the pixel budget, remuxed when its timeline cannot be trusted (see
 * timelineNeedsRemux), and checked for interlacing.
 */
export async function readInput(
  deps: ReadInputDeps,
  signal: AbortSignal,
  o: { inputPath: string; workDir: string },
): Promise<JobInput> {
  let path = o.inputPath;
  let info = withVideo(await deps.probe(path));
  checkInputPixels(info.video, deps.maxPixels);
  checkInputPixels(info.video.display, deps.maxPixels);
  if (timelineNeedsRemux(info)) {
    path = join(o.workDir, 'input.mkv');
    await deps.runFfmpeg(remuxArgs(o.inputPath, info, path), {
      signal,
      stallTimeoutMs: deps.stallTimeoutMs,
    });
    info = withVideo(await deps.probe(path));
  }
  const deinterlace = await fieldParity(deps, signal, {
    inputPath: path,
    video: info.video,
    scratchPath: join(o.workDir, 'idet.txt'),
  });
  return { path, info, video: info.video, ...(deinterlace ? { deinterlace } : {}) };
}

function withVideo(info: MediaInfo): MediaInfo & { video: VideoInfo } {
  const { video } = info;
  if (!video) throw new MediaError('input_unsupported', 'the input has no video stream');
  return { ...info, video };
}

/**
 * Transport and program streams (saved broadcasts, HLS segments joined with `cat`) may restart
 * or jump their timestamps, and their header's length is a guess from the first and last
 * packets; a file that declares no length at all (a browser's MediaRecorder WebM) has no index
 * either. Copied into Matroska once, with ffmpeg's own timestamp repair on the way, such a
 * file gets one continuous timeline from zero, a true length and an index: the seeks and
 * lengths of every later step are then right.
 */
export function timelineNeedsRemux(info: MediaInfo): boolean {
  const formats = info.formatName.split(',');
  return (
    formats.includes('mpegts') || formats.includes('mpeg') || info.durationSource !== 'container'
  );
}

/**
 * The video, the first audio stream (the ones outputs carry) and the text subtitle streams
 * (captions.ts), copied; a mov_text track, which Matroska cannot hold, becomes SubRip.
 */
function remuxArgs(
  inputPath: string,
  info: MediaInfo & { video: VideoInfo },
  out: string,
): string[] {
  const subtitles = textSubtitleStreams(info);
  return [
    ...inputArgs(inputPath),
    '-map',
    `0:${info.video.index}`,
    ...(info.audio ? ['-map', `0:${info.audio.index}`] : []),
    ...subtitles.flatMap((s) => ['-map', `0:${s.index}`]),
    '-c',
    'copy',
    ...subtitles.flatMap((s, k) => [
      ...(MATROSKA_TEXT.has(s.codec) ? [] : [`-c:s:${k}`, 'subrip']),
      // `-map_metadata -1` drops the streams' tags too: a track keeps its language and title.
      ...(s.language ? [`-metadata:s:s:${k}`, `language=${s.language}`] : []),
      ...(s.title ? [`-metadata:s:s:${k}`, `title=${s.title}`] : []),
    ]),
    '-map_metadata',
    '-1',
    '-f',
    'matroska',
    '-y',
    out,
  ];
}

/** Text subtitle codecs Matroska holds as they are. */
const MATROSKA_TEXT = new Set(['subrip', 'srt', 'ass', 'ssa', 'webvtt']);

/**
 * A decode that ended well before the length the input's header declares means a truncated or
 * damaged file (a cut-off upload): the input's fault, said as such, not an invalid output.
 * Only a header's length counts (a measured one is what was decoded).
 */
export function checkDecodedLength(info: MediaInfo, decodedSeconds: number): void {
  if (info.durationSource !== 'container' || decodedSeconds <= 0) return;
  const declared =
    Math.max(info.video?.durationSeconds ?? 0, info.audio?.durationSeconds ?? 0) ||
    info.durationSeconds;
  if (decodedSeconds < declared * 0.9 - 0.5)
    throw new MediaError(
      'input_corrupt',
      `the input could be decoded for ${round1(decodedSeconds)} s of the ${round1(declared)} s its header declares: the file is truncated or damaged`,
    );
}

const round1 = (n: number): number => Math.round(n * 10) / 10;
