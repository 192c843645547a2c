/**
 * The two manifests over one set of CMAF segments: an HLS master playlist (the media playlists
 * are ffmpeg's) and a DASH MPD, both declaring what was measured from the files (see
 * measure-renditions.ts), never the encoder's targets. Pure: renditions in, text out.
 */
import type { CaptionRendition } from './caption-renditions.ts';
import type { MeasuredRendition } from './measure-renditions.ts';

export const HLS_MASTER = 'master.m3u8';
export const DASH_MANIFEST = 'manifest.mpd';

export interface ManifestOptions {
  renditions: readonly MeasuredRendition[];
  /** Output frames per second (the input's). */
  frameRate: number;
  /** Audio channels and rate of the audio rendition, when there is one. */
  audio?: { channels: number; sampleRate: number };
  /** WebVTT caption renditions, in the order players list them. */
  captions?: readonly CaptionRendition[];
}

const AUDIO_GROUP = 'audio';
const SUBTITLES_GROUP = 'subs';

/**
 * HLS master playlist, as Apple's authoring rules ask: each variant with BANDWIDTH (peak) and
 * AVERAGE-BANDWIDTH including its audio group, CODECS of video and audio, RESOLUTION and
 * FRAME-RATE; audio once, in its own rendition group; the caption tracks in one SUBTITLES group
 * that every variant names, none on by default (AUTOSELECT lets a player pick the viewer's
 * language).
 */
export function hlsMaster(o: ManifestOptions): string {
  const audio = o.renditions.find((r) => r.type === 'audio');
  const lines = ['#EXTM3U', '#EXT-X-VERSION:7', '#EXT-X-INDEPENDENT-SEGMENTS'];
  if (audio)
    lines.push(
      `#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="${AUDIO_GROUP}",NAME="audio",LANGUAGE="und",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="${o.audio?.channels ?? 2}",URI="${audio.name}/index.m3u8"`,
    );
  const subtitles = (o.captions ?? []).filter((c) => c.playlist !== undefined);
  for (const c of subtitles)
    lines.push(
      `#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="${SUBTITLES_GROUP}",NAME="${quoted(c.label)}",LANGUAGE="${quoted(c.language)}",DEFAULT=NO,AUTOSELECT=YES,URI="${c.playlist}"`,
    );
  for (const video of o.renditions.filter((r) => r.type === 'video')) {
    const attributes = [
      `BANDWIDTH=${video.peakBitsPerSecond + (audio?.peakBitsPerSecond ?? 0)}`,
      `AVERAGE-BANDWIDTH=${video.averageBitsPerSecond + (audio?.averageBitsPerSecond ?? 0)}`,
      `CODECS="${[video.codecs, ...(audio ? [audio.codecs] : [])].join(',')}"`,
      `RESOLUTION=${video.width}x${video.height}`,
      `FRAME-RATE=${o.frameRate.toFixed(3)}`,
      ...(audio ? [`AUDIO="${AUDIO_GROUP}"`] : []),
      ...(subtitles.length > 0 ? [`SUBTITLES="${SUBTITLES_GROUP}"`] : []),
    ];
    lines.push(`#EXT-X-STREAM-INF:${attributes.join(',')}`, `${video.name}/index.m3u8`);
  }
  return `${lines.join('\n')}\n`;
}

/** An HLS quoted-string holds no double quote (RFC 8216 §4.2): a label's become single ones. */
const quoted = (text: string): string => text.replaceAll('"', "'");

/** Text and attribute values of the MPD. */
const xml = (text: string): string =>
  text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');

/** ISO 8601 duration in seconds, millisecond precision. */
const isoDuration = (seconds: number): string => `PT${seconds.toFixed(3)}S`;

/**
 * DASH MPD (static, live profile with CMAF): one adaptation set of the video rungs, one of the
 * audio, each representation with a SegmentTemplate over the very files the HLS playlists
 * name and a SegmentTimeline of their decode times; `bandwidth` is the measured peak. Each
 * caption track is a text adaptation set of its own: one representation, the whole WebVTT file.
 */
export function dashManifest(o: ManifestOptions): string {
  const video = o.renditions.filter((r) => r.type === 'video');
  const audio = o.renditions.filter((r) => r.type === 'audio');
  const duration = Math.max(...o.renditions.map(renditionSeconds));
  const maxSegment = Math.max(...o.renditions.map((r) => r.targetDurationSeconds));
  const top = video[0];
  const sets = [
    `    <AdaptationSet id="0" contentType="video" mimeType="video/mp4" segmentAlignment="true" startWithSAP="1"${top ? ` maxWidth="${top.width}" maxHeight="${top.height}"` : ''} frameRate="${frameRateOf(o.frameRate)}">`,
    ...video.map(
      (r) =>
        `      <Representation id="${r.name}" bandwidth="${r.peakBitsPerSecond}" codecs="${r.codecs}" width="${r.width}" height="${r.height}" sar="1:1">\n${segmentTemplate(r)}\n      </Representation>`,
    ),
    '    </AdaptationSet>',
    ...(audio.length > 0
      ? [
          `    <AdaptationSet id="1" contentType="audio" mimeType="audio/mp4" lang="und" segmentAlignment="true" startWithSAP="1">`,
          ...audio.map(
            (r) =>
              `      <Representation id="${r.name}" bandwidth="${r.peakBitsPerSecond}" codecs="${r.codecs}" audioSamplingRate="${o.audio?.sampleRate ?? 48000}">\n        <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="${o.audio?.channels ?? 2}"/>\n${segmentTemplate(r)}\n      </Representation>`,
          ),
          '    </AdaptationSet>',
        ]
      : []),
    ...(o.captions ?? []).map((c, k) => textAdaptationSet(c, 2 + k)),
  ];
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011,urn:mpeg:dash:profile:cmaf:2019" type="static" mediaPresentationDuration="${isoDuration(duration)}" minBufferTime="${isoDuration(maxSegment)}">`,
    '  <Period id="0" start="PT0S">',
    ...sets,
    '  </Period>',
    '</MPD>',
    '',
  ].join('\n');
}

/**
 * A caption track as DASH-IF's interoperability guidelines give a side-loaded WebVTT file: contentType text,
 * mimeType text/vtt, its language, the subtitle role, its label, a BaseURL to the file.
 */
function textAdaptationSet(c: CaptionRendition, id: number): string {
  return [
    `    <AdaptationSet id="${id}" contentType="text" mimeType="text/vtt" lang="${xml(c.language)}">`,
    `      <Label>${xml(c.label)}</Label>`,
    '      <Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle"/>',
    `      <Representation id="caption_${id - 2}" bandwidth="256">`,
    `        <BaseURL>${xml(c.track)}</BaseURL>`,
    '      </Representation>',
    '    </AdaptationSet>',
  ].join('\n');
}

function renditionSeconds(r: MeasuredRendition): number {
  return r.segments.reduce((n, s) => n + s.durationSeconds, 0);
}

/** `25`, or `30000/1001` for NTSC rates. */
function frameRateOf(rate: number): string {
  const ntsc = Math.round(rate * 1.001);
  if (Math.abs(rate - ntsc / 1.001) < 0.001 && Math.abs(rate - ntsc) > 0.001)
    return `${ntsc * 1000}/1001`;
  return String(Math.round(rate * 1000) / 1000);
}

/**
 * The segments by number (ffmpeg names them seg_00000.m4s, …) on a timeline of their decode
 * times: each duration is the next segment's start less this one's, the last one's its
 * playlist length; equal durations in a row are one `<S>` with a repeat count.
 */
function segmentTemplate(r: MeasuredRendition): string {
  r.segments.forEach((s, k) => {
    if (s.uri !== `seg_${String(k).padStart(5, '0')}.m4s`)
      throw new Error(`rendition ${r.name}: segment ${k} is named ${s.uri}`);
  });
  const durations = r.segments.map((s, k) => {
    const next = r.segments[k + 1];
    return next
      ? next.decodeTime - s.decodeTime
      : Math.max(1, Math.round(s.durationSeconds * r.timescale));
  });
  const runs: { t?: number; d: number; r: number }[] = [];
  durations.forEach((d, k) => {
    const last = runs.at(-1);
    if (last && last.d === d) last.r += 1;
    else runs.push({ ...(k === 0 ? { t: r.segments[0]?.decodeTime ?? 0 } : {}), d, r: 0 });
  });
  const s = runs.map(
    (run) =>
      `            <S${run.t === undefined ? '' : ` t="${run.t}"`} d="${run.d}"${run.r > 0 ? ` r="${run.r}"` : ''}/>`,
  );
  return [
    `        <SegmentTemplate timescale="${r.timescale}" initialization="${r.name}/${r.init}" media="${r.name}/seg_$Number%05d$.m4s" startNumber="0">`,
    '          <SegmentTimeline>',
    ...s,
    '          </SegmentTimeline>',
    '        </SegmentTemplate>',
  ].join('\n');
}
