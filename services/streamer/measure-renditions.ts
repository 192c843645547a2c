import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Rung } from './ladder.ts';
import { AUDIO_RENDITION } from './build-ladder-args.ts';
import { codecString, segmentDecodeTime, trackTimescale } from './read-cmaf.ts';

export interface MeasuredSegment {
  /** File name, relative to its rendition's folder. */
  uri: string;
  durationSeconds: number;
  bytes: number;
  /** Decode start in the track's timescale (the MPD's timeline). */
  decodeTime: number;
}

/** One rendition as written: what the manifests declare, measured from its files. */
export interface MeasuredRendition {
  /** Its folder under the output prefix: the rung's name, or `audio`. */
  name: string;
  type: 'video' | 'audio';
  width?: number;
  height?: number;
  codecs: string;
  timescale: number;
  /** The init segment's file name, relative to the rendition's folder. */
  init: string;
  initBytes: number;
  segments: MeasuredSegment[];
  targetDurationSeconds: number;
  /** Peak segment bit rate as RFC 8216bis §4.4.6.2 defines it (see peakBitRate). */
  peakBitsPerSecond: number;
  /** All media segments' bits over their total duration. */
  averageBitsPerSecond: number;
  totalBytes: number;
}

/** Reads back each rendition ffmpeg wrote under `outDir` (see buildLadderArgs). */
export async function measureRenditions(
  outDir: string,
  rungs: readonly Rung[],
  withAudio: boolean,
): Promise<MeasuredRendition[]> {
  const video = await Promise.all(
    rungs.map(async (r) => ({
      ...(await measureRendition(join(outDir, r.name), r.name, 'video')),
      width: r.width,
      height: r.height,
    })),
  );
  if (!withAudio) return video;
  return [
    ...video,
    await measureRendition(join(outDir, AUDIO_RENDITION), AUDIO_RENDITION, 'audio'),
  ];
}

async function measureRendition(
  dir: string,
  name: string,
  type: 'video' | 'audio',
): Promise<MeasuredRendition> {
  const playlist = parseMediaPlaylist(await readFile(join(dir, 'index.m3u8'), 'utf8'));
  const init = await readFile(join(dir, playlist.init));
  const segments = await Promise.all(
    playlist.segments.map(async (s) => {
      const bytes = await readFile(join(dir, s.uri));
      return { ...s, bytes: bytes.length, decodeTime: segmentDecodeTime(bytes) };
    }),
  );
  const mediaBytes = segments.reduce((n, s) => n + s.bytes, 0);
  const seconds = segments.reduce((n, s) => n + s.durationSeconds, 0);
  return {
    name,
    type,
    codecs: codecString(init),
    timescale: trackTimescale(init),
    init: playlist.init,
    initBytes: (await stat(join(dir, playlist.init))).size,
    segments,
    targetDurationSeconds: playlist.targetDuration,
    peakBitsPerSecond: peakBitRate(segments, playlist.targetDuration),
    averageBitsPerSecond: seconds > 0 ? Math.round((mediaBytes * 8) / seconds) : 0,
    totalBytes: mediaBytes + init.length,
  };
}

/**
 * The largest bit rate of any run of consecutive segments lasting 0.5 to 1.5 target durations
 * (RFC 8216bis §4.4.6.2): a short last segment is measured with its neighbour, not alone.
 */
export function peakBitRate(
  segments: readonly { durationSeconds: number; bytes: number }[],
  targetDuration: number,
): number {
  let peak = 0;
  for (let i = 0; i < segments.length; i++) {
    let seconds = 0;
    let bytes = 0;
    for (let j = i; j < segments.length; j++) {
      seconds += segments[j]?.durationSeconds ?? 0;
      bytes += segments[j]?.bytes ?? 0;
      if (seconds > 1.5 * targetDuration) break;
      if (seconds >= 0.5 * targetDuration) peak = Math.max(peak, (bytes * 8) / seconds);
    }
  }
  if (peak === 0 && segments.length > 0) {
    // A whole rendition shorter than half a target duration: its one rate.
    const seconds = segments.reduce((n, s) => n + s.durationSeconds, 0);
    const bytes = segments.reduce((n, s) => n + s.bytes, 0);
    peak = seconds > 0 ? (bytes * 8) / seconds : 0;
  }
  return Math.ceil(peak);
}

/** The parts of a media playlist ffmpeg's HLS muxer writes that the manifests need. */
export function parseMediaPlaylist(text: string): {
  targetDuration: number;
  init: string;
  segments: { uri: string; durationSeconds: number }[];
} {
  const lines = text.split('\n').map((l) => l.trim());
  const target = Number(/^#EXT-X-TARGETDURATION:(\d+)/m.exec(text)?.[1]);
  const init = /^#EXT-X-MAP:URI="([^"]+)"/m.exec(text)?.[1];
  if (!init || !Number.isFinite(target)) throw new Error('a media playlist without a map');
  const segments: { uri: string; durationSeconds: number }[] = [];
  lines.forEach((line, k) => {
    const extinf = /^#EXTINF:([\d.]+)/.exec(line);
    const uri = lines[k + 1];
    if (extinf && uri) segments.push({ uri, durationSeconds: Number(extinf[1]) });
  });
  return { targetDuration: target, init, segments };
}
