import { MediaError } from '../errors.ts';

/**
 * Copies the packets of a Matroska file into MP4 without re-encoding. ffmpeg 5.1's mp4 muxer
 * refuses VP8; mediabunny writes it with a `vp08` sample entry. The moov box goes at the end
 * (its fast-start modes need the packet count up front or the whole file in memory).
 */
export async function remuxToMp4(sourcePath: string, targetPath: string): Promise<void> {
  // Loaded on first use (about 10 MB): only VP8-in-MP4 outputs need it.
  const {
    ALL_FORMATS,
    Conversion,
    FilePathSource,
    FilePathTarget,
    Input,
    Mp4OutputFormat,
    Output,
  } = await import('mediabunny');
  const input = new Input({ source: new FilePathSource(sourcePath), formats: ALL_FORMATS });
  try {
    const output = new Output({
      format: new Mp4OutputFormat({ fastStart: false }),
      target: new FilePathTarget(targetPath),
    });
    const conversion = await Conversion.init({ input, output });
    if (!conversion.isValid || conversion.discardedTracks.length > 0)
      throw new MediaError(
        'transcode_failed',
        `the remux to mp4 would drop tracks: ${conversion.discardedTracks.map((t) => t.reason).join(', ')}`,
      );
    await conversion.execute();
  } finally {
    input.dispose();
  }
}
