import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  LadderChoice,
  QualityReport,
  StreamResult,
} from '../core/contracts/types.generated.ts';
import type { Rung } from './ladder.ts';
import type { PublishItem } from './publish-objects.ts';
import type { WrittenLadder } from './write-ladder.ts';

const CONTENT_TYPES: Record<string, string> = {
  m4s: 'video/iso.segment',
  mp4: 'video/mp4',
  m3u8: 'application/vnd.apple.mpegurl',
  mpd: 'application/dash+xml',
  jpg: 'image/jpeg',
  json: 'application/json',
  vtt: 'text/vtt',
};

/** One file under the output folder as a publish item (its content type by extension). */
export async function item(outDir: string, key: string, audio = false): Promise<PublishItem> {
  const extension = key.slice(key.lastIndexOf('.') + 1);
  const contentType =
    audio && extension === 'mp4'
      ? 'audio/mp4'
      : (CONTENT_TYPES[extension] ?? 'application/octet-stream');
  const path = join(outDir, key);
  return { path, key, contentType, sizeBytes: (await stat(path)).size };
}

/**
 * The stream's objects in three phases: media (init and media segments, images), then what
 * names them (media playlists, the thumbnail track; the caption files go with the media, their
 * playlists with the playlists), then the manifests players open (HLS
 * master, MPD). A player that finds a manifest finds everything it names. Keys in `published`
 * (segments uploaded while the encode went on) are left out; `more` (the rungs' per-frame
 * quality files) go with the media.
 */
export async function publishPhases(
  outDir: string,
  ladder: WrittenLadder,
  published: ReadonlySet<string> = new Set(),
  more: readonly string[] = [],
): Promise<PublishItem[][]> {
  const media: Promise<PublishItem>[] = more.map((key) => item(outDir, key));
  const playlists: Promise<PublishItem>[] = [];
  for (const r of ladder.renditions) {
    const audio = r.type === 'audio';
    media.push(item(outDir, `${r.name}/${r.init}`, audio));
    for (const s of r.segments)
      if (!published.has(`${r.name}/${s.uri}`))
        media.push(item(outDir, `${r.name}/${s.uri}`, audio));
    // DASH alone needs no media playlists.
    if (ladder.manifests.hls) playlists.push(item(outDir, `${r.name}/index.m3u8`));
  }
  const t = ladder.thumbnails;
  if (t) {
    media.push(item(outDir, t.poster), ...t.sheets.map((s) => item(outDir, s)));
    playlists.push(item(outDir, t.track));
  }
  for (const c of ladder.captions ?? []) {
    media.push(item(outDir, c.track));
    if (c.playlist) playlists.push(item(outDir, c.playlist));
  }
  const manifests = Object.values(ladder.manifests).map((m) => item(outDir, m));
  return [await Promise.all(media), await Promise.all(playlists), await Promise.all(manifests)];
}

/**
 * The result's `stream` part: URLs under the prefix, the measured rungs, the caption renditions,
 * the totals.
 */
export function streamResult(
  prefix: string,
  ladder: WrittenLadder,
  rungs: readonly Rung[],
  o: {
    segmentSeconds: number;
    objects: number;
    totalBytes: number;
    /** Each rung's quality report, by rung name. */
    quality?: ReadonlyMap<string, QualityReport>;
    /** How a per-title ladder was chosen (per-title.ts). */
    ladderChoice?: LadderChoice | undefined;
  },
): StreamResult {
  const kbps = (bits: number): number => Math.round(bits / 100) / 10;
  const videos = ladder.renditions.filter((r) => r.type === 'video');
  const audio = ladder.renditions.find((r) => r.type === 'audio');
  const t = ladder.thumbnails;
  const { hls, dash } = ladder.manifests;
  const result = {
    manifests: {
      ...(hls ? { hls: prefix + hls } : {}),
      ...(dash ? { dash: prefix + dash } : {}),
    },
    rungs: videos.map((r) => ({
      name: r.name,
      width: r.width ?? 0,
      height: r.height ?? 0,
      codecs: r.codecs,
      targetKbps: rungs.find((x) => x.name === r.name)?.bitrateKbps ?? 0,
      averageKbps: kbps(r.averageBitsPerSecond),
      peakKbps: kbps(r.peakBitsPerSecond),
      sizeBytes: r.totalBytes,
      ...(hls ? { playlistUrl: `${prefix}${r.name}/index.m3u8` } : {}),
      ...(o.quality?.has(r.name) ? { quality: o.quality.get(r.name) } : {}),
    })),
    ...(o.ladderChoice ? { ladderChoice: o.ladderChoice } : {}),
    ...(audio
      ? {
          audio: {
            codecs: audio.codecs,
            averageKbps: kbps(audio.averageBitsPerSecond),
            peakKbps: kbps(audio.peakBitsPerSecond),
            sizeBytes: audio.totalBytes,
          },
        }
      : {}),
    ...(t
      ? {
          thumbnails: {
            posterUrl: prefix + t.poster,
            trackUrl: prefix + t.track,
            sheetUrls: t.sheets.map((s) => prefix + s),
          },
        }
      : {}),
    ...(ladder.captions
      ? {
          captions: ladder.captions.map((c) => ({
            language: c.language,
            label: c.label,
            url: prefix + c.track,
            ...(c.playlist ? { playlistUrl: prefix + c.playlist } : {}),
          })),
        }
      : {}),
    segmentSeconds: o.segmentSeconds,
    objects: o.objects,
    totalBytes: o.totalBytes,
  };
  return result as StreamResult;
}
