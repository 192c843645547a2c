import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CaptionsOption } from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { MediaStore } from '../storage/media-store.ts';
import { withRateFloor, type RateFloor } from '../storage/transfer-rate.ts';
import {
  CaptionFormatError,
  parseCaptions,
  trimCues,
  writeWebVtt,
  type Cue,
} from './caption-cues.ts';
import type { MediaInfo, SubtitleInfo } from './media-info.ts';
import { inputArgs, type FfmpegRunner } from './run-ffmpeg.ts';
import type { InputTrim } from './trim.ts';

/** One caption track of a job's output, ready as a local WebVTT file on the job's timeline. */
export interface CaptionTrack {
  /** A local, validated WebVTT file in the job's work dir, its cues on the (trimmed) output's timeline. */
  path: string;
  /** The input stream's language tag (ISO 639-2, `und` when it has none), or the file's BCP 47 tag. */
  language: string;
  /** The name players show: the file's label, or the input stream's title (else its language). */
  label: string;
  source: 'input' | 'file';
  /** Its place among its source: the input's text subtitle streams, or `captions.files`. */
  index: number;
}

/** Largest caption file read from a caller's URL, bytes. */
export const CAPTION_FILE_MAX_BYTES = 1024 * 1024;

/**
 * Subtitle codecs made of text, which WebVTT can carry; the others are pictures (DVD, PGS, DVB),
 * or MP4's WebVTT (`wvtt`), text that ffmpeg cannot decode.
 */
const TEXT_CODECS = new Set(['mov_text', 'subrip', 'srt', 'ass', 'ssa', 'webvtt', 'text']);

export interface CaptionDeps {
  /** The http(s) store (address policy, rate floor and size cap as for every caller URL). */
  http: MediaStore;
  runFfmpeg: FfmpegRunner;
  stallTimeoutMs: number;
  log: Logger;
  /** Downloads slower than this are cut, as the input's are (unset: only the store's idle timeout). */
  rateFloor?: RateFloor;
}

export interface CaptionJob {
  /** The job's `captions` option (undefined: the input's text streams are kept). */
  captions: CaptionsOption | undefined;
  /** The file ffmpeg reads the input from, and its probe (its length the trim's, when trimmed). */
  inputPath: string;
  info: MediaInfo;
  workDir: string;
  trim?: InputTrim | undefined;
  signal: AbortSignal;
}

/** The input's subtitle streams that are text, in stream order (what `burnIn.inputTrack` counts). */
export function textSubtitleStreams(info: MediaInfo): SubtitleInfo[] {
  return (info.subtitleStreams ?? []).filter((s) => TEXT_CODECS.has(s.codec));
}

/**
 * The job's caption tracks: the input's text subtitle streams first, in stream order (unless
 * `keepInput` is false), then the caller's files in request order. Bitmap streams, and MP4
 * WebVTT ones ffmpeg cannot decode, are passed over (logged). A file that cannot be fetched keeps
 * its fetch error's code; one that is not SubRip or WebVTT fails with `input_caption_invalid`;
 * both name it `captions.files[i] ("label")`.
 */
export async function prepareCaptions(deps: CaptionDeps, job: CaptionJob): Promise<CaptionTrack[]> {
  const keepInput = job.captions?.keepInput ?? true;
  const unread = (job.info.subtitleStreams ?? []).filter((s) => !TEXT_CODECS.has(s.codec));
  if (keepInput && unread.length)
    deps.log.info('captions.streams_ignored', { codecs: unread.map((s) => s.codec) });
  const streams = textSubtitleStreams(job.info).map((stream, index) => ({ stream, index }));
  const input = keepInput ? await inputTracks(deps, job, streams) : [];
  const files: CaptionTrack[] = [];
  for (const [index, file] of (job.captions?.files ?? []).entries())
    files.push(await fileTrack(deps, job, index, file));
  return [...input, ...files];
}

/**
 * The track `captions.burnIn` names: one of `tracks`, or an input stream that is not kept as a
 * soft track (`keepInput` false), extracted for the burn-in alone. Undefined without a burn-in.
 */
export async function burnInTrack(
  deps: CaptionDeps,
  job: CaptionJob,
  tracks: readonly CaptionTrack[],
): Promise<CaptionTrack | undefined> {
  const burnIn = job.captions?.burnIn;
  if (!burnIn) return undefined;
  const [source, index, what] =
    burnIn.file !== undefined
      ? (['file', burnIn.file, 'captions.files'] as const)
      : (['input', burnIn.inputTrack ?? 0, 'the text subtitle streams of the input'] as const);
  const kept = tracks.find((t) => t.source === source && t.index === index);
  if (kept) return kept;
  const stream = source === 'input' ? textSubtitleStreams(job.info)[index] : undefined;
  if (!stream || (job.captions?.keepInput ?? true))
    throw new MediaError(
      'input_caption_invalid',
      `captions.burnIn names track ${index} of ${what}, which has no such track`,
    );
  const [track] = await inputTracks(deps, job, [{ stream, index }]);
  return track;
}

/** Input text streams, extracted to WebVTT in one ffmpeg run, then cut to the trim. */
async function inputTracks(
  deps: CaptionDeps,
  job: CaptionJob,
  streams: { stream: SubtitleInfo; index: number }[],
): Promise<CaptionTrack[]> {
  if (streams.length === 0) return [];
  const raw = streams.map(({ index }) =>
    join(job.workDir, `captions-input-${index}.extracted.vtt`),
  );
  await deps.runFfmpeg(
    [
      ...inputArgs(job.inputPath),
      ...streams.flatMap(({ stream }, i) => [
        '-map',
        `0:${stream.index}`,
        '-c:s',
        'webvtt',
        '-f',
        'webvtt',
        '-y',
        raw[i] ?? '',
      ]),
    ],
    { signal: job.signal, stallTimeoutMs: deps.stallTimeoutMs },
  );
  const tracks: CaptionTrack[] = [];
  for (const [i, { stream, index }] of streams.entries()) {
    const { cues } = parseCaptions(await readFile(raw[i] ?? ''), { allowNoCues: true });
    const path = join(job.workDir, `captions-input-${index}.vtt`);
    await writeFile(path, writeWebVtt(onTimeline(cues, job)), 'utf8');
    const language = stream.language ?? 'und';
    tracks.push({ path, language, label: stream.title ?? language, source: 'input', index });
  }
  return tracks;
}

type CaptionFile = NonNullable<CaptionsOption['files']>[number];

async function fileTrack(
  deps: CaptionDeps,
  job: CaptionJob,
  index: number,
  file: CaptionFile,
): Promise<CaptionTrack> {
  const name = `captions.files[${index}] (${JSON.stringify(file.label)})`;
  const download = join(job.workDir, `captions-file-${index}.download`);
  const fetch = (signal: AbortSignal, onProgress: (bytes: number) => void) =>
    deps.http.download(file.url, download, {
      signal,
      maxBytes: CAPTION_FILE_MAX_BYTES,
      onProgress,
    });
  await (
    deps.rateFloor
      ? withRateFloor(deps.rateFloor, 'input', job.signal, fetch)
      : fetch(job.signal, () => undefined)
  ).catch((error: unknown) => {
    // Only a MediaError's message is written for callers; it names neither the URL nor a path.
    if (!(error instanceof MediaError)) throw error;
    throw new MediaError(error.code, `${name} could not be fetched: ${error.message}`, {
      cause: error,
    });
  });
  let cues: Cue[];
  try {
    ({ cues } = parseCaptions(await readFile(download)));
  } catch (error) {
    if (!(error instanceof CaptionFormatError)) throw error;
    throw new MediaError(
      'input_caption_invalid',
      `${name} ${error.message}: it must be SubRip or WebVTT in UTF-8`,
      {
        cause: error,
      },
    );
  }
  const path = join(job.workDir, `captions-file-${index}.vtt`);
  await writeFile(path, writeWebVtt(onTimeline(cues, job)), 'utf8');
  return { path, language: file.language, label: file.label, source: 'file', index };
}

/**
 * The cues on the output's timeline: shifted by the trim's start, cut at its edges or at the
 * input's end (a cue past the picture would lengthen the output).
 */
function onTimeline(cues: Cue[], job: CaptionJob): Cue[] {
  return trimCues(cues, {
    startMs: Math.round((job.trim?.startSeconds ?? 0) * 1000),
    durationMs: Math.round((job.trim?.durationSeconds ?? job.info.durationSeconds) * 1000),
  });
}
