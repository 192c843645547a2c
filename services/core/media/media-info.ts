/**
 * The one model of a media file that every step of a job works from, read from ffprobe's JSON
 * (`-show_format -show_streams`). Pure: the prober runs ffprobe, this reads what it printed.
 *
 * Sizes come twice: as stored (what the decoder outputs, what decoding costs) and as displayed
 * (after the sample aspect ratio and the display rotation, what a viewer sees). ffmpeg turns
 * rotated frames upright itself before any filter (autorotate), so every output size, summary
 * width and watermark position works on the displayed picture.
 */

/** Where `durationSeconds` came from, best first. */
export type DurationSource = 'container' | 'streams' | 'packets' | 'none';

/** SDR, or the transfer of an HDR input (PQ: HDR10 and Dolby Vision bases; HLG: broadcast, iPhone). */
export type DynamicRange = 'sdr' | 'pq' | 'hlg';

/** Interlacing as the stream declares it: `unknown` when it says nothing (see detect-interlace.ts). */
export type FieldOrder = 'progressive' | 'tff' | 'bff' | 'unknown';

export interface VideoInfo {
  /** The stream's index in the file (what `-map 0:N` and `[0:N]` name). */
  index: number;
  codec: string;
  codecTag: string;
  profile?: string;
  /** Stored frame size, as decoded. */
  width: number;
  height: number;
  /** The picture a viewer sees: sample aspect ratio applied, then turned by `rotation`. */
  display: { width: number; height: number };
  /** Clockwise degrees the picture is turned for display (0, 90, 180 or 270). */
  rotation: 0 | 90 | 180 | 270;
  /** Sample (pixel) aspect ratio, width over height; 1 for square pixels or none declared. */
  sampleAspectRatio: number;
  /** Average frames per second (0 when unknown). */
  frameRate: number;
  /** The stream's base rate and its average differ: frames come at irregular times. */
  variableFrameRate: boolean;
  /**
   * The rate ffmpeg 5.1 gives an encoder of this stream when none is set (its
   * av_guess_frame_rate): the base rate (`r_frame_rate`), or the average where the base rate is
   * a timestamp resolution (above 210 with an average below 70). An encoder's time base is one
   * over it. 0 when unknown; absent in models made by hand.
   */
  nominalFrameRate?: number;
  fieldOrder: FieldOrder;
  /** Bits per sample of the decoded picture (8, 10, 12). */
  bitDepth: number;
  pixFmt?: string;
  colour: { primaries?: string; transfer?: string; matrix?: string; range?: 'tv' | 'pc' };
  dynamicRange: DynamicRange;
  /** Frames (or packets, when counted) in the stream. */
  frames?: number;
  startSeconds?: number;
  durationSeconds?: number;
}

export interface AudioInfo {
  index: number;
  codec: string;
  channels: number;
  /** ffmpeg's name of the layout ("stereo", "5.1(side)"), when the file declares one. */
  layout?: string;
  sampleRate: number;
  startSeconds?: number;
  durationSeconds?: number;
}

export interface MediaInfo {
  /** ffprobe's format_name, e.g. "mov,mp4,m4a,3gp,3g2,mj2" or "matroska,webm". */
  formatName: string;
  /** The best length available: the container's, else the streams', else a packet scan's. */
  durationSeconds: number;
  durationSource: DurationSource;
  /** The container's start time (a saved stream may start hours from zero). */
  startSeconds: number;
  sizeBytes: number;
  /** Bits per second of the whole file. */
  bitRate?: number;
  /** The main video stream (cover art and thumbnails are passed over). */
  video?: VideoInfo;
  /** The first audio stream: the one outputs carry. */
  audio?: AudioInfo;
  audioStreams: AudioInfo[];
  /** Every subtitle stream, text or bitmap, in stream order (captions.ts keeps the text ones). */
  subtitleStreams?: SubtitleInfo[];
}

export interface SubtitleInfo {
  /** The stream's index in the file (what `-map 0:N` names). */
  index: number;
  /**
   * ffprobe's codec name: mov_text, subrip, ass, ssa, webvtt; dvd_subtitle, hdmv_pgs_subtitle…;
   * `wvtt` for an MP4 WebVTT track, which ffmpeg cannot decode.
   */
  codec: string;
  /** The stream's `language` tag as the file has it (ISO 639-2 in MP4 and Matroska), if any. */
  language?: string;
  /** The stream's `title` tag (`handler_name` in MP4 is the muxer's, not a title), if any. */
  title?: string;
}

/** The part of ffprobe's JSON this model reads. */
export interface ProbeJson {
  format?: {
    format_name?: string;
    duration?: string;
    size?: string;
    bit_rate?: string;
    start_time?: string;
  };
  streams?: ProbeStream[];
}

export interface ProbeStream {
  index?: number;
  codec_type?: string;
  codec_name?: string;
  codec_tag_string?: string;
  profile?: string;
  width?: number;
  height?: number;
  sample_aspect_ratio?: string;
  pix_fmt?: string;
  field_order?: string;
  color_range?: string;
  color_space?: string;
  color_transfer?: string;
  color_primaries?: string;
  bits_per_raw_sample?: string;
  r_frame_rate?: string;
  avg_frame_rate?: string;
  start_time?: string;
  duration?: string;
  nb_frames?: string;
  nb_read_packets?: string;
  channels?: number;
  channel_layout?: string;
  sample_rate?: string;
  disposition?: { attached_pic?: number };
  tags?: Record<string, string | undefined>;
  side_data_list?: { side_data_type?: string; rotation?: number }[];
}

/** What a packet scan of the video found (see probe-media.ts), for files that declare no length. */
export interface PacketSpan {
  durationSeconds: number;
}

/** The model of a file from its ffprobe JSON, and a packet scan's length when it had to make one. */
export function readMediaInfo(json: ProbeJson, scanned?: PacketSpan): MediaInfo {
  const streams = json.streams ?? [];
  const videoStream =
    streams.find((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1) ??
    streams.find((s) => s.codec_type === 'video');
  const audioStreams = streams.filter((s) => s.codec_type === 'audio').map(readAudio);
  const video = videoStream ? readVideo(videoStream) : undefined;
  const audio = audioStreams[0];
  const subtitleStreams = streams.filter(isSubtitle).map(readSubtitle);
  const { seconds, source } = bestDuration(json, video, audio, scanned);
  return {
    formatName: json.format?.format_name ?? '',
    durationSeconds: seconds,
    durationSource: source,
    startSeconds: positive(json.format?.start_time) ?? 0,
    sizeBytes: Number(json.format?.size ?? 0) || 0,
    ...(json.format?.bit_rate ? { bitRate: Number(json.format.bit_rate) } : {}),
    ...(video ? { video } : {}),
    ...(audio ? { audio } : {}),
    audioStreams,
    ...(subtitleStreams.length ? { subtitleStreams } : {}),
  };
}

function bestDuration(
  json: ProbeJson,
  video: VideoInfo | undefined,
  audio: AudioInfo | undefined,
  scanned: PacketSpan | undefined,
): { seconds: number; source: DurationSource } {
  const container = positive(json.format?.duration);
  if (container) return { seconds: container, source: 'container' };
  const streams = Math.max(video?.durationSeconds ?? 0, audio?.durationSeconds ?? 0);
  if (streams > 0) return { seconds: streams, source: 'streams' };
  if (scanned && scanned.durationSeconds > 0)
    return { seconds: scanned.durationSeconds, source: 'packets' };
  return { seconds: 0, source: 'none' };
}

function readVideo(s: ProbeStream): VideoInfo {
  const width = s.width ?? 0;
  const height = s.height ?? 0;
  const sampleAspectRatio = ratio(s.sample_aspect_ratio) || 1;
  const rotation = rotationOf(s);
  // Anamorphic pixels widen (or narrow) the picture; the height is kept, as players do.
  const shownWidth = Math.max(1, Math.round(width * sampleAspectRatio));
  const turned = rotation === 90 || rotation === 270;
  const avg = ratio(s.avg_frame_rate);
  const base = ratio(s.r_frame_rate);
  const frameRate = avg || base;
  const frames = Number(s.nb_read_packets ?? s.nb_frames ?? NaN);
  const transfer = s.color_transfer;
  const start = finite(s.start_time);
  const duration = positive(s.duration);
  return {
    index: s.index ?? 0,
    codec: s.codec_name ?? '',
    codecTag: s.codec_tag_string ?? '',
    ...(s.profile ? { profile: s.profile } : {}),
    width,
    height,
    display: turned ? { width: height, height: shownWidth } : { width: shownWidth, height },
    rotation,
    sampleAspectRatio,
    frameRate: round3(frameRate),
    variableFrameRate: avg > 0 && base > 0 && Math.abs(avg - base) / base > 0.01,
    nominalFrameRate: avg > 0 && avg < 70 && base > 210 ? avg : base,
    fieldOrder: fieldOrderOf(s.field_order),
    bitDepth: bitDepthOf(s),
    ...(s.pix_fmt ? { pixFmt: s.pix_fmt } : {}),
    colour: {
      ...(known(s.color_primaries) ? { primaries: s.color_primaries } : {}),
      ...(known(transfer) ? { transfer } : {}),
      ...(known(s.color_space) ? { matrix: s.color_space } : {}),
      ...(s.color_range === 'pc' || s.color_range === 'tv' ? { range: s.color_range } : {}),
      // yuvj* formats are full range whatever the tag says (MJPEG, some cameras).
      ...(s.pix_fmt?.startsWith('yuvj') ? { range: 'pc' as const } : {}),
    },
    dynamicRange:
      transfer === 'smpte2084' ? 'pq' : transfer === 'arib-std-b67' ? 'hlg' : ('sdr' as const),
    ...(Number.isFinite(frames) ? { frames } : {}),
    ...(start !== undefined ? { startSeconds: start } : {}),
    ...(duration ? { durationSeconds: duration } : {}),
  };
}

function readAudio(s: ProbeStream): AudioInfo {
  const start = finite(s.start_time);
  const duration = positive(s.duration);
  return {
    index: s.index ?? 0,
    codec: s.codec_name ?? '',
    channels: s.channels ?? 0,
    ...(s.channel_layout ? { layout: s.channel_layout } : {}),
    sampleRate: Number(s.sample_rate ?? 0) || 0,
    ...(start !== undefined ? { startSeconds: start } : {}),
    ...(duration ? { durationSeconds: duration } : {}),
  };
}

/**
 * A subtitle stream, or an MP4 WebVTT track (`wvtt`, ISO 14496-30, what remux-to-mp4.ts writes),
 * which ffprobe (5.1, and 9.0 still) reads as a data stream of no codec it knows: codec `wvtt`.
 */
function isSubtitle(s: ProbeStream): boolean {
  return s.codec_type === 'subtitle' || isMp4WebVtt(s);
}

const isMp4WebVtt = (s: ProbeStream): boolean =>
  s.codec_type === 'data' && s.codec_tag_string === 'wvtt';

function readSubtitle(s: ProbeStream): SubtitleInfo {
  const language = s.tags?.['language'];
  const title = s.tags?.['title'];
  return {
    index: s.index ?? 0,
    codec: isMp4WebVtt(s) ? 'wvtt' : (s.codec_name ?? ''),
    ...(language && language !== 'und' ? { language } : {}),
    ...(title ? { title } : {}),
  };
}

/**
 * Clockwise display rotation. ffprobe reports a display matrix's angle counter-clockwise (so a
 * phone held upright, turned 90° clockwise for display, shows -90); older files carry a
 * clockwise `rotate` tag instead.
 */
function rotationOf(s: ProbeStream): VideoInfo['rotation'] {
  const matrix = s.side_data_list?.find((d) => typeof d.rotation === 'number')?.rotation;
  const tag = Number(s.tags?.['rotate']);
  const clockwise =
    matrix !== undefined ? -matrix : Number.isFinite(tag) && s.tags?.['rotate'] ? tag : 0;
  const quarter = ((Math.round(clockwise / 90) % 4) + 4) % 4;
  return ([0, 90, 180, 270] as const)[quarter] ?? 0;
}

function fieldOrderOf(value: string | undefined): FieldOrder {
  if (value === 'progressive') return 'progressive';
  // tb/bt: fields stored in one order, shown in the other; the shown order is what counts.
  if (value === 'tt' || value === 'bt') return 'tff';
  if (value === 'bb' || value === 'tb') return 'bff';
  return 'unknown';
}

function bitDepthOf(s: ProbeStream): number {
  const raw = Number(s.bits_per_raw_sample);
  if (Number.isFinite(raw) && raw > 0) return raw;
  const match = /p(\d+)(le|be)$/.exec(s.pix_fmt ?? '');
  return match ? Number(match[1]) : 8;
}

/** "16:15" or "30000/1001" as a number; 0 for "0:1", "0/0", "N/A" or nothing. */
function ratio(value: string | undefined): number {
  const match = /^(\d+)[:/](\d+)$/.exec(value ?? '');
  if (!match) return 0;
  const den = Number(match[2]);
  return den > 0 ? Number(match[1]) / den : 0;
}

const known = (value: string | undefined): value is string =>
  value !== undefined && value !== 'unknown' && value !== 'unspecified' && value !== 'reserved';

function finite(value: string | undefined): number | undefined {
  const n = Number(value);
  return value !== undefined && value !== 'N/A' && Number.isFinite(n) ? n : undefined;
}

function positive(value: string | undefined): number | undefined {
  const n = finite(value);
  return n !== undefined && n > 0 ? n : undefined;
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;
