import type { AudioInfo } from './media-info.ts';

/** The audio encoders outputs use: AAC in MP4, Opus in WebM, PCM inside a summary's parts. */
export type AudioEncoder = 'aac' | 'opus' | 'pcm';

/** Sample rates AAC (and MP4) take as they are; others are resampled to 48 kHz. */
const AAC_RATES = new Set([
  8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000,
]);

/**
 * The layout and rate an output gets: mono and stereo kept, six channels (5.1, or 5.1(side) as
 * AC-3 from cameras and DVDs lays them out, which libopus refuses) as 5.1, anything else (quad,
 * 7.1, an unnamed layout) down-mixed to stereo; Opus always at 48 kHz (the only rate it keeps),
 * AAC at the input's rate where it takes it.
 */
export function audioTarget(
  audio: AudioInfo,
  encoder: AudioEncoder,
): { layout: 'mono' | 'stereo' | '5.1'; sampleRate: number; channels: number } {
  const layout = audio.channels === 1 ? 'mono' : audio.channels === 6 ? '5.1' : 'stereo';
  const sampleRate =
    encoder === 'opus' || !AAC_RATES.has(audio.sampleRate) ? 48000 : audio.sampleRate;
  return { layout, sampleRate, channels: layout === 'mono' ? 1 : layout === '5.1' ? 6 : 2 };
}

/**
 * The filter that gives an output's audio its layout and rate (see audioTarget), its samples
 * laid on their timestamps: where a saved stream's segments join, audio that overlaps is cut
 * and a gap filled with silence (without it, two Opus packets of a joined TS shared one
 * timestamp), so audio stays in step with the video. `loudness` (loudness.ts: a gain, or a
 * normaliser that works at its own rate) comes after, on the output's layout, and the format is
 * set again behind it.
 */
export function audioFormatFilter(
  audio: AudioInfo,
  encoder: AudioEncoder,
  loudness?: string,
): string {
  const target = audioTarget(audio, encoder);
  const format = `aformat=sample_rates=${target.sampleRate}:channel_layouts=${target.layout}`;
  return ['aresample=async=1', format, ...(loudness ? [loudness, format] : [])].join(',');
}

/** Encoder arguments, the bitrate by channel count (5.1 needs about three times stereo's). */
export function audioEncoderArgs(audio: AudioInfo, encoder: 'aac' | 'opus'): string[] {
  const { channels } = audioTarget(audio, encoder);
  const kbps =
    encoder === 'aac' ? { 1: 96, 2: 128, 6: 320 }[channels] : { 1: 64, 2: 96, 6: 256 }[channels];
  return ['-c:a', encoder === 'aac' ? 'aac' : 'libopus', '-b:a', `${kbps ?? 128}k`];
}
