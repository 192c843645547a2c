import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { AUDIO_RATE, LEAD, SAMPLES_PER_SECOND, type AnalysisPart } from './analysis-parts.ts';

/**
 * Keyframe times in seconds, ascending, from the parts' framecrc listings (`#tb 0: a/b`, then
 * `stream, dts, pts, …` per keyframe, pts counted from where the part was read).
 */
export async function readKeyframes(
  parts: readonly AnalysisPart[],
  paths: readonly string[],
): Promise<number[]> {
  const times = new Set<number>();
  for (const [k, path] of paths.entries()) {
    const text = await readFile(path, 'utf8');
    const tb = /^#tb 0: (\d+)\/(\d+)$/m.exec(text);
    if (!tb) continue;
    const unit = Number(tb[1]) / Number(tb[2]);
    const start = parts[k]?.startSeconds ?? 0;
    const from = start > 0 ? start - LEAD : 0;
    for (const line of text.split('\n')) {
      if (line.startsWith('#')) continue;
      const pts = Number(line.split(',')[2]);
      if (Number.isFinite(pts)) times.add(Math.round((from + pts * unit) * 1000) / 1000);
    }
  }
  return [...times].sort((a, b) => a - b);
}

/**
 * RMS of each half second of the raw audio, relative to the loudest (0 to 1), one per video
 * sample: sample i gets the half second that ends at it (sample 0 none). Streamed, never whole.
 */
export async function readLoudness(
  parts: readonly AnalysisPart[],
  paths: readonly (string | undefined)[],
  samples: number,
): Promise<number[]> {
  const windows: number[] = [];
  for (const [k, path] of paths.entries()) {
    if (!path) continue;
    const part = await windowRms(path);
    const seconds = parts[k]?.seconds;
    // A later part's first window is its lead: the previous part's last.
    const skip = k > 0 ? 1 : 0;
    const keep = seconds === undefined ? part.length - skip : seconds * SAMPLES_PER_SECOND;
    for (let i = 0; i < keep; i++) windows.push(part[skip + i] ?? 0);
  }
  const loudest = windows.reduce((a, b) => Math.max(a, b), 1e-6);
  return Array.from({ length: samples }, (_, i) => (i === 0 ? 0 : (windows[i - 1] ?? 0) / loudest));
}

async function windowRms(path: string): Promise<number[]> {
  const perWindow = AUDIO_RATE / SAMPLES_PER_SECOND;
  const rms: number[] = [];
  let sum = 0;
  let count = 0;
  let carry: Buffer | undefined;
  for await (const data of createReadStream(path)) {
    const chunk = carry ? Buffer.concat([carry, data as Buffer]) : (data as Buffer);
    const even = chunk.length - (chunk.length % 2);
    for (let i = 0; i < even; i += 2) {
      const v = chunk.readInt16LE(i) / 32768;
      sum += v * v;
      if (++count === perWindow) {
        rms.push(Math.sqrt(sum / count));
        sum = 0;
        count = 0;
      }
    }
    carry = even < chunk.length ? chunk.subarray(even) : undefined;
  }
  if (count > 0) rms.push(Math.sqrt(sum / count));
  return rms;
}
