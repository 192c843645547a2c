import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { audioTarget } from '../core/media/audio-format.ts';
import { AUDIO_RENDITION, buildLadderPasses, type LadderArgsOptions } from './build-ladder-args.ts';
import {
  THUMBNAILS_DIR,
  THUMBNAIL_TRACK,
  POSTER_FILE,
  sheetName,
  thumbnailTrack,
} from './thumbnails.ts';
import {
  writeCaptionRenditions,
  type CaptionInput,
  type CaptionRendition,
} from './caption-renditions.ts';
import { measureRenditions, type MeasuredRendition } from './measure-renditions.ts';
import {
  DASH_MANIFEST,
  HLS_MASTER,
  dashManifest,
  hlsMaster,
  type ManifestOptions,
} from './write-manifests.ts';

/** Which manifests a stream job publishes. */
export type StreamFormat = 'hls' | 'dash';

export interface WrittenLadder {
  renditions: MeasuredRendition[];
  /** Manifest file names under the output folder, by format. */
  manifests: Partial<Record<StreamFormat, string>>;
  /** Paths under the output folder of the poster, the WebVTT track and its sprite sheets. */
  thumbnails?: { poster: string; track: string; sheets: string[] };
  /** The caption renditions, when the job has caption tracks. */
  captions?: CaptionRendition[];
}

/**
 * Encodes the ladder in two ffmpeg passes (`run` runs each: the job's cancel, stall limit,
 * progress; only the `encode` pass writes to `o.outDir`), then measures what it wrote and writes
 * the manifests beside it, in `o.outDir`, with the caption tracks (`o.captions`) as WebVTT
 * renditions.
 */
export async function writeLadder(
  run: (args: readonly string[], pass: 'analyse' | 'encode') => Promise<unknown>,
  o: LadderArgsOptions & {
    formats: readonly StreamFormat[];
    captions?: readonly CaptionInput[] | undefined;
  },
): Promise<WrittenLadder> {
  const audio = o.input.info.audio;
  await Promise.all([
    ...o.rungs.map((r) => mkdir(join(o.outDir, r.name), { recursive: true })),
    ...(audio ? [mkdir(join(o.outDir, AUDIO_RENDITION), { recursive: true })] : []),
    ...(o.thumbnails ? [mkdir(join(o.outDir, THUMBNAILS_DIR), { recursive: true })] : []),
  ]);
  const [analysis, encode] = buildLadderPasses(o);
  await run(analysis, 'analyse');
  await run(encode, 'encode');
  const renditions = await measureRenditions(o.outDir, o.rungs, audio !== undefined);
  const target = audio ? audioTarget(audio, 'aac') : undefined;
  const captions = await writeCaptionRenditions(o.outDir, o.captions ?? [], {
    durationSeconds: Math.max(...renditions.map(playedSeconds)),
    hls: o.formats.includes('hls'),
  });
  const options: ManifestOptions = {
    renditions,
    frameRate: o.input.video.frameRate,
    ...(target ? { audio: { channels: target.channels, sampleRate: target.sampleRate } } : {}),
    ...(captions.length > 0 ? { captions } : {}),
  };
  const manifests: WrittenLadder['manifests'] = {};
  if (o.formats.includes('hls')) {
    await writeFile(join(o.outDir, HLS_MASTER), hlsMaster(options));
    manifests.hls = HLS_MASTER;
  }
  if (o.formats.includes('dash')) {
    await writeFile(join(o.outDir, DASH_MANIFEST), dashManifest(options));
    manifests.dash = DASH_MANIFEST;
  }
  const written = { renditions, manifests, ...(captions.length > 0 ? { captions } : {}) };
  const plan = o.thumbnails;
  if (!plan) return written;
  const track = `${THUMBNAILS_DIR}/${THUMBNAIL_TRACK}`;
  await writeFile(join(o.outDir, track), thumbnailTrack(plan, o.input.info.durationSeconds));
  const thumbnails = {
    poster: `${THUMBNAILS_DIR}/${POSTER_FILE}`,
    track,
    sheets: Array.from({ length: plan.sheets }, (_, k) => `${THUMBNAILS_DIR}/${sheetName(k + 1)}`),
  };
  return { ...written, thumbnails };
}

const playedSeconds = (r: MeasuredRendition): number =>
  r.segments.reduce((n, s) => n + s.durationSeconds, 0);
