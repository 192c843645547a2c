// Inputs shaped for loudness normalisation (issue 30): a speech-like signal (pink noise in
// syllable-rate bursts with pauses) made quiet, made loud by clipping as mastered music is, and
// quiet with sharp clicks whose true peak leaves no room for a linear gain; and ffmpeg's own
// `ebur128` summary as the independent measure of any file's loudness.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ffmpeg = (): string => process.env['TEST_FFMPEG'] ?? 'ffmpeg';

const SPEECH =
  'anoisesrc=d=8:c=pink:r=48000:a=0.5:seed=7,' +
  "volume=volume='if(lt(mod(t\\,2)\\,1.4)\\,0.6+0.4*sin(2*PI*5*t)\\,0.03)':eval=frame";

/** The audio of each input shape (8 s, stereo once encoded), as a lavfi source. */
export const LOUDNESS_SHAPES = {
  /** About −38 LUFS, true peak about −23 dBTP. */
  quiet: `${SPEECH},lowpass=f=3500,volume=-10dB`,
  /** About −12.5 LUFS, true peak about −4 dBTP (clipped, as loud masters are). */
  loud: `${SPEECH},aeval=clip(val(0)*6\\,-0.6\\,0.6):c=same,lowpass=f=8000`,
  /** About −32 LUFS with clicks of −3.5 dBTP: a linear gain to −16 would clip them. */
  clicks: `${SPEECH},lowpass=f=3500,volume=-8dB,aeval=val(0)+if(lt(mod(t\\,2.5)\\,0.002)\\,0.9*sin(2*PI*1000*t)\\,0):c=same`,
} as const;

/** An 8 s MP4 (320x180 grey H.264 picture, AAC stereo at 192 kb/s) with one of the shapes. */
export async function makeLoudnessInput(
  path: string,
  shape: keyof typeof LOUDNESS_SHAPES,
): Promise<void> {
  await run(ffmpeg(), [
    ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'color=c=gray:s=320x180:r=10:d=8'],
    ...['-f', 'lavfi', '-i', LOUDNESS_SHAPES[shape]],
    ...['-map', '0:v', '-map', '1:a', '-c:v', 'libx264', '-preset', 'ultrafast'],
    ...['-c:a', 'aac', '-b:a', '192k', '-ac', '2', '-shortest', path],
  ]);
}

export interface Ebur128Summary {
  integratedLufs: number;
  rangeLu: number;
  truePeakDbtp: number;
}

/** ffmpeg's `ebur128` summary (integrated, LRA, true peak) of a file's first audio track. */
export async function ebur128Summary(path: string): Promise<Ebur128Summary> {
  const { stderr } = await run(
    ffmpeg(),
    [
      ...['-hide_banner', '-nostats', '-i', path, '-map', '0:a:0'],
      ...['-af', 'ebur128=peak=true', '-f', 'null', '-'],
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  ).catch((error: { stderr?: string }) => {
    throw new Error(`ebur128 failed: ${error.stderr?.slice(-500) ?? ''}`);
  });
  const summary = stderr.slice(stderr.lastIndexOf('Summary:'));
  const figure = (pattern: RegExp): number => {
    const match = pattern.exec(summary);
    if (!match) throw new Error(`no ${String(pattern)} in the ebur128 summary`);
    return Number(match[1]);
  };
  return {
    integratedLufs: figure(/I:\s+(-?[\d.]+) LUFS/),
    rangeLu: figure(/LRA:\s+(-?[\d.]+) LU\b/),
    truePeakDbtp: figure(/True peak:\s+Peak:\s+(-?[\d.]+|-inf) dBFS/),
  };
}
