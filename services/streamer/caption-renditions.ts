/**
 * Caption tracks published as WebVTT renditions beside the ladder: each track's validated WebVTT
 * file as one object, named by the DASH MPD (a text adaptation set) and by an HLS subtitle media
 * playlist of one segment that spans the stream (hls.js and dash.js read the whole file at once).
 * The cues are already on the output's timeline (the core shifts them by the trim), whose zero is
 * the video's and the thumbnail track's zero, so the file is copied as it is.
 */
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StreamSpec } from '../core/contracts/types.generated.ts';
import { bcp47Language } from '../core/media/language-codes.ts';
import type { JobInput } from '../core/media/read-input.ts';
import { jobCaptions } from '../core/media-job/job-captions.ts';
import type { MediaJobDeps } from '../core/media-job/media-job.ts';
import type { JobContext } from '../core/worker/job-handler.ts';

/** The folder of the caption renditions under the output prefix. */
export const CAPTIONS_DIR = 'captions';

/** A caption track to publish (what the core's CaptionTrack holds of it). */
export interface CaptionInput {
  /** A local, validated WebVTT file on the output's timeline. */
  path: string;
  /** BCP 47 or ISO 639-2 language tag (`und` when the input did not say). */
  language: string;
  /** The track's name in players' menus. */
  label: string;
}

/** One caption rendition as published: keys relative to the output folder. */
export interface CaptionRendition {
  /** BCP 47, its shortest form (an input's `eng` becomes `en`). */
  language: string;
  label: string;
  /** The WebVTT file (the DASH representation and the HLS playlist's one segment). */
  track: string;
  /** The HLS subtitle media playlist, when HLS is published. */
  playlist?: string;
}

/**
 * The stream's caption tracks, made ready by the core (captions.ts: the input's text subtitle
 * streams unless `keepInput` is false, then the caller's files; cues on the trimmed timeline).
 * None when the request has no `captions` and the input no text subtitle stream, so such a stream
 * publishes what it did before captions existed.
 */
export async function streamCaptions(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: { spec: StreamSpec; input: JobInput; workDir: string },
): Promise<CaptionInput[]> {
  const prepared = await jobCaptions(deps, ctx, { ...o, captions: o.spec.captions });
  return prepared?.tracks ?? [];
}

const keyOf = (k: number, extension: string): string => `${CAPTIONS_DIR}/caption_${k}.${extension}`;

/**
 * Copies each track's WebVTT file under `outDir` (in the order given) and, for HLS, writes its
 * subtitle media playlist: one segment of `durationSeconds`, the stream's length.
 */
export async function writeCaptionRenditions(
  outDir: string,
  tracks: readonly CaptionInput[],
  o: { durationSeconds: number; hls: boolean },
): Promise<CaptionRendition[]> {
  if (tracks.length === 0) return [];
  await mkdir(join(outDir, CAPTIONS_DIR), { recursive: true });
  return Promise.all(
    tracks.map(async (t, k) => {
      const track = keyOf(k, 'vtt');
      await copyFile(t.path, join(outDir, track));
      const rendition = { language: bcp47Language(t.language), label: t.label, track };
      if (!o.hls) return rendition;
      const playlist = keyOf(k, 'm3u8');
      await writeFile(join(outDir, playlist), subtitlePlaylist(track, o.durationSeconds));
      return { ...rendition, playlist };
    }),
  );
}

/**
 * A VOD subtitle media playlist whose one segment is the whole WebVTT file (relative to the
 * playlist, which sits beside it). The target duration is the segment's, rounded up, as RFC 8216
 * §4.3.3.1 requires.
 */
export function subtitlePlaylist(track: string, durationSeconds: number): string {
  const file = track.slice(track.lastIndexOf('/') + 1);
  return [
    '#EXTM3U',
    '#EXT-X-VERSION:7',
    `#EXT-X-TARGETDURATION:${Math.max(1, Math.ceil(durationSeconds))}`,
    '#EXT-X-MEDIA-SEQUENCE:0',
    '#EXT-X-PLAYLIST-TYPE:VOD',
    `#EXTINF:${durationSeconds.toFixed(3)},`,
    file,
    '#EXT-X-ENDLIST',
    '',
  ].join('\n');
}
