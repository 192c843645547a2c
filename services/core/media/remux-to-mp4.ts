import { readFile } from 'node:fs/promises';
import type { Conversion, Output, TextSubtitleSource } from 'mediabunny';
import { MediaError } from '../errors.ts';
import { parseCaptions, writeWebVtt, type Cue } from './caption-cues.ts';
import type { CaptionTrack } from './captions.ts';
import { iso639Part2 } from './language-codes.ts';

/** A caption track the remux writes: a local WebVTT file on the encode's timeline. */
export type Mp4CaptionTrack = Pick<CaptionTrack, 'path' | 'language' | 'label'>;

/**
 * Copies the packets of a Matroska file into MP4 without re-encoding. ffmpeg 5.1's mp4 muxer
 * refuses VP8; mediabunny writes it with a `vp08` sample entry. The moov box goes at the end
 * (its fast-start modes need the packet count up front or the whole file in memory).
 *
 * `captions` follow the video and audio, in order, as WebVTT tracks (a `wvtt` sample entry,
 * ISO 14496-30: the one subtitle format mediabunny writes), each with its language (ISO 639-2)
 * and its label as the track's name (`udta/name`); the first is the default one, as ffmpeg
 * marks it. mediabunny reads no subtitle track from the Matroska file: the cues come from the
 * job's WebVTT files.
 */
export async function remuxToMp4(
  sourcePath: string,
  targetPath: string,
  captions: readonly Mp4CaptionTrack[] = [],
): Promise<void> {
  const texts = await Promise.all(captions.map((track) => mp4CueText(track.path)));
  // Loaded on first use (about 10 MB): only VP8-in-MP4 outputs need it.
  const mediabunny = await import('mediabunny');
  const { ALL_FORMATS, Conversion, FilePathSource, FilePathTarget, Input } = mediabunny;
  const { Mp4OutputFormat, Output, TextSubtitleSource } = mediabunny;
  const input = new Input({ source: new FilePathSource(sourcePath), formats: ALL_FORMATS });
  try {
    const output = new Output({
      format: new Mp4OutputFormat({ fastStart: false }),
      target: new FilePathTarget(targetPath),
    });
    // Composable: the output is started and finalized here, so that tracks of our own join the
    // conversion's. Starting at 0 keeps the encode's timeline, which the cues are on.
    const conversion = await Conversion.init({
      input,
      output,
      composable: true,
      trim: { start: 0 },
    });
    checkTracks(conversion);
    const sources = captions.map((track, k) => captionSource(TextSubtitleSource, output, track, k));
    try {
      await output.start();
      // Not closed one by one: a source's close() runs the muxer unawaited, so its failure would
      // be an unhandled rejection; finalize() flushes them and throws what went wrong.
      for (const [k, source] of sources.entries()) await source.add(texts[k] ?? '');
      await conversion.execute();
      await output.finalize();
    } catch (error) {
      // The remux's own failure is the one to report; the cancel only closes the file.
      await output.cancel().catch(() => undefined);
      throw error;
    }
  } finally {
    input.dispose();
  }
}

function checkTracks(conversion: Conversion): void {
  const dropped = conversion.discardedTracks.map((t) => t.reason);
  if (dropped.length > 0 || conversion.utilizedTracks.length === 0)
    throw new MediaError(
      'transcode_failed',
      `the remux to mp4 would drop tracks: ${dropped.join(', ') || 'all'}`,
    );
}

/** The `k`-th caption track added to `output`, and the source its cues are given to. */
function captionSource(
  Source: typeof TextSubtitleSource,
  output: Output,
  track: Mp4CaptionTrack,
  k: number,
): TextSubtitleSource {
  const source = new Source('webvtt');
  output.addSubtitleTrack(source, {
    languageCode: iso639Part2(track.language),
    name: track.label,
    disposition: { default: k === 0 },
  });
  return source;
}

/**
 * A track's cues as mediabunny's WebVTT muxer takes them: by start time (it refuses others),
 * none of no length (one sends it into a loop that fills the heap, or fails an assertion), and
 * a track without cues given one empty cue of 1 ms (it writes a track only once a cue comes;
 * ffmpeg's mov_text holds one empty sample for such a track).
 */
async function mp4CueText(path: string): Promise<string> {
  const { cues } = parseCaptions(await readFile(path), { allowNoCues: true });
  const kept = cues.filter((cue) => cue.endMs > cue.startMs).sort((a, b) => a.startMs - b.startMs);
  const none: Cue[] = [{ startMs: 0, endMs: 1, lines: [] }];
  return writeWebVtt(kept.length > 0 ? kept : none);
}
