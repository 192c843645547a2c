// What the docs promise of every output, as checks on ffprobe's view of it: the audio rule of
// docs/inputs.md ("audio layouts and rates"), the colour tags of docs/inputs.md (HDR row), and a
// summary's length, start and sync (docs/design.md, "Summaries"). The rules are written out here
// from the docs, not imported from the service, so that a service that breaks them fails.
import {
  audioStreams,
  videoStream,
  type Probed,
  type ProbedStream,
  type StreamTimes,
} from './media-checks.ts';

/** The audio an output must have, derived from the input's audio stream the docs say is used. */
export interface DocumentedAudio {
  channels: number;
  /** ffprobe's name of the layout. */
  layout: 'mono' | 'stereo' | '5.1';
  sampleRate: number;
}

/** MPEG-4 audio's sampling frequencies (ISO/IEC 14496-3, the sampling frequency index). */
const AAC_RATES = new Set([
  96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000,
  7_350,
]);

/**
 * docs/inputs.md: "mono and stereo kept, six channels (5.1 or 5.1(side)) kept as 5.1, anything
 * else down-mixed to stereo; Opus at 48 kHz, AAC at the input's rate when it takes it; the first
 * audio stream". `undefined` when the input has no audio (the output must have none).
 */
export function documentedAudio(input: Probed, codec: 'aac' | 'opus'): DocumentedAudio | undefined {
  const first = audioStreams(input)[0];
  if (!first) return undefined;
  const channels = first.channels ?? 0;
  const layout = channels === 1 ? 'mono' : channels === 6 ? '5.1' : 'stereo';
  const rate = Number(first.sample_rate);
  const sampleRate = codec === 'aac' && AAC_RATES.has(rate) ? rate : 48_000;
  return { layout, sampleRate, channels: { mono: 1, stereo: 2, '5.1': 6 }[layout] };
}

/**
 * The output's audio against the documented rule: one audio stream when the input has audio
 * (the first input stream's layout and rate turned into the output's; a service that used
 * another track of a different layout, or made everything mono, fails), none when it has none.
 */
export function audioProblems(input: Probed, output: Probed, codec: 'aac' | 'opus'): string[] {
  const want = documentedAudio(input, codec);
  const streams = audioStreams(output);
  if (!want)
    return streams.length ? [`audio added to an input without audio (${streams.length})`] : [];
  if (streams.length !== 1) return [`${streams.length} audio streams, not 1`];
  const got = streams[0];
  const seen = [got?.channels, got?.channel_layout, Number(got?.sample_rate)];
  const wanted = [want.channels, want.layout, want.sampleRate];
  return seen.join() === wanted.join()
    ? []
    : [`audio ${seen.join('/')}, not ${wanted.join('/')} (channels/layout/rate)`];
}

/**
 * docs/inputs.md: "every output is 8-bit 4:2:0 BT.709 limited range and tagged so". A GIF has
 * no such tags (its palette is RGB), so this is for the video formats.
 */
export function colourTagProblems(output: Probed): string[] {
  const video = videoStream(output);
  if (!video) return ['no video stream'];
  const seen = [video.color_primaries, video.color_transfer, video.color_space, video.color_range];
  const wanted = ['bt709', 'bt709', 'bt709', 'tv'];
  return seen.join() === wanted.join()
    ? []
    : [`colour tags ${seen.map((t) => t ?? 'none').join('/')}, not ${wanted.join('/')}`];
}

/** docs/design.md: inputs up to this long are summarised whole. */
const WHOLE_UP_TO_SECONDS = 6;

/**
 * The length a summary may have, in seconds (docs/design.md, "Summaries"): the target is a
 * quarter of the input, at least 6 s and at most 30 s, and an input of 6 s or less is used whole;
 * each clip ends on a whole frame, so the summary may run over by up to one frame per segment
 * (`frameSeconds`, the longer of the input's and the output's frame), and its last frame may end
 * up to one frame before the input's end.
 */
export function summaryLengthBounds(
  inputSeconds: number,
  segments: number,
  frameSeconds: number,
): { min: number; max: number } {
  const over = Math.max(1, segments) * frameSeconds;
  if (inputSeconds <= WHOLE_UP_TO_SECONDS)
    return { min: inputSeconds - frameSeconds, max: inputSeconds + over };
  const target = Math.min(30, Math.max(6, inputSeconds / 4));
  return { min: WHOLE_UP_TO_SECONDS - frameSeconds, max: target + over };
}

/** What summaryProblems needs to know besides the output's packet times. */
export interface SummaryFacts {
  /** The input's content length, in seconds. */
  inputSeconds: number;
  /** Segments in the job's result. */
  segments: number;
  /** The longer of one input frame and one output frame, in seconds. */
  frameSeconds: number;
  /** One frame of the output's audio (1024 samples of AAC), in seconds; unset without audio. */
  audioFrameSeconds?: number;
  /**
   * Where the audio should start after the video, in seconds: 0, or the input's own offset
   * where the first segment starts before its audio does ("offset kept", docs/inputs.md).
   */
  audioOffsetSeconds?: number;
}

/** Timestamps are rounded to the millisecond in some containers (Matroska, FLV). */
const ROUNDING_SECONDS = 0.001;

/**
 * A summary's length within its documented bounds, its video starting at zero and its audio
 * with it (or at the input's own offset), and (MP4) its audio in step with its video to the
 * end: the ends agree within one audio frame plus one video frame per segment (docs/design.md:
 * each clip ends on a whole frame; an AAC stream's last packet carries its padding), the start
 * within one audio frame (an MP4 whose audio starts late keeps the encoder's priming frame on
 * its timeline) and a rounding.
 */
export function summaryProblems(
  times: { video?: StreamTimes; audio?: StreamTimes },
  facts: SummaryFacts,
): string[] {
  const { video, audio } = times;
  if (!video) return ['no video packets'];
  const problems: string[] = [];
  const length = video.end - video.start;
  const { min, max } = summaryLengthBounds(facts.inputSeconds, facts.segments, facts.frameSeconds);
  if (length < min - ROUNDING_SECONDS || length > max + ROUNDING_SECONDS)
    problems.push(
      `summary lasts ${length.toFixed(3)} s, not ${min.toFixed(3)}-${max.toFixed(3)} s ` +
        `(input ${facts.inputSeconds} s, ${facts.segments} segments)`,
    );
  if (Math.abs(video.start) > ROUNDING_SECONDS)
    problems.push(`video starts at ${video.start.toFixed(3)} s`);
  if (!audio) return problems;
  const audioFrame = facts.audioFrameSeconds ?? 0;
  const offset = audio.start - video.start;
  const wanted = facts.audioOffsetSeconds ?? 0;
  if (Math.abs(offset - wanted) > audioFrame + ROUNDING_SECONDS)
    problems.push(
      `audio starts ${offset.toFixed(3)} s after the video, not ${wanted.toFixed(3)} s`,
    );
  const allowed = audioFrame + Math.max(1, facts.segments) * facts.frameSeconds;
  if (Math.abs(audio.end - video.end) > allowed)
    problems.push(
      `audio ends at ${audio.end.toFixed(3)} s, video at ${video.end.toFixed(3)} s ` +
        `(more than ${allowed.toFixed(3)} s apart)`,
    );
  return problems;
}

/** Seconds per frame of a stream's `r_frame_rate` ("25/1"); undefined when it says none. */
export function frameSeconds(stream: ProbedStream | undefined): number | undefined {
  const [num, den] = (stream?.r_frame_rate ?? '').split('/').map(Number);
  return num && den ? den / num : undefined;
}

/** Mean luma (signalstats YAVG) and saturation (SATAVG) of a picture. */
export interface PictureStats {
  luma: number;
  saturation: number;
}

/**
 * What is wrong with an HDR input's SDR output against the SDR clip it was made from: mean luma
 * more than 25 % off, or less than 0.6 of its saturation (BT.2020 colours read as BT.709 keep
 * 0.28-0.49 of it; every tone map measured keeps at least 0.74: real-uploads.test.ts says more).
 */
export function toneMapProblems(out: PictureStats, reference: PictureStats): string[] {
  const problems: string[] = [];
  if (Math.abs(out.luma / reference.luma - 1) > 0.25)
    problems.push(`mean luma ${out.luma.toFixed(1)} vs SDR ${reference.luma.toFixed(1)}`);
  if (out.saturation < 0.6 * reference.saturation)
    problems.push(
      `saturation ${out.saturation.toFixed(1)} vs SDR ${reference.saturation.toFixed(1)}`,
    );
  return problems;
}
