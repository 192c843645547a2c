import { open } from 'node:fs/promises';
import type {
  LoudnessMeasurement,
  LoudnessOption,
  LoudnessReport,
} from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import { safePath } from './safe-path.ts';
import { inputArgs, type FfmpegRunner } from './run-ffmpeg.ts';

/** The true-peak ceiling when the request names none, dBTP. */
export const DEFAULT_TRUE_PEAK_DBTP = -1;

/**
 * Room kept under the ceiling for the lossy encoder: AAC and Opus rebuild a waveform whose true
 * peak can sit a few tenths of a dB above the one they were given.
 */
export const CODEC_HEADROOM_DB = 0.5;

/** BS.1770's absolute gate: an integrated loudness at or below it means no audio to measure. */
const GATE_LUFS = -70;

/** What the encode does to the audio's loudness: the filter to put in its chain, and why. */
export interface LoudnessPlan {
  /** A filter for the audio chain; absent when the audio is left as it is. */
  filter?: string;
  mode: LoudnessReport['mode'];
  gainDb?: number;
  targetLufs: number;
  truePeakDbtp: number;
  input: LoudnessMeasurement;
}

/**
 * Measures one audio stream's loudness (`stream`: its index, or `a:0`) with ffmpeg's `ebur128` (integrated, range, true peak),
 * reading the last figures it printed to `scratchPath`; `layout` (an input's) down-mixes it first
 * to the output's channel layout, which the gain is then applied to (audio-format.ts); `filter`
 * measures the audio as that filter makes it.
 */
export async function measureLoudness(
  deps: { runFfmpeg: FfmpegRunner; stallTimeoutMs: number },
  signal: AbortSignal,
  o: {
    path: string;
    stream: string;
    scratchPath: string;
    layout?: string;
    filter?: string;
    /** Input options before `-i` (a job's trim). */
    before?: string[];
  },
): Promise<LoudnessMeasurement> {
  const layout = o.layout ? `aformat=channel_layouts=${o.layout},` : '';
  const filter = o.filter ? `${o.filter},` : '';
  await deps.runFfmpeg(
    [
      ...inputArgs(o.path, o.before),
      '-map',
      `0:${o.stream}`,
      '-vn',
      '-af',
      `${layout}${filter}ebur128=metadata=1:peak=true,ametadata=mode=print:file=${safePath(o.scratchPath)}`,
      '-f',
      'null',
      '-',
    ],
    { signal, stallTimeoutMs: deps.stallTimeoutMs },
  );
  return lastLoudness(await readTail(o.scratchPath, 8192));
}

/**
 * The figures of the last frame `ebur128` printed (each frame carries the integrated loudness
 * and range so far, and every channel's highest true peak so far, as a linear amplitude).
 */
export function lastLoudness(printed: string): LoudnessMeasurement {
  const start = printed.lastIndexOf('frame:');
  const block = start < 0 ? '' : printed.slice(start);
  const value = (key: string): number | undefined => {
    const match = new RegExp(`^lavfi\\.r128\\.${key}=(\\S+)$`, 'm').exec(block);
    const n = match ? Number(match[1]) : NaN;
    return Number.isFinite(n) ? n : undefined;
  };
  const integrated = value('I');
  const range = value('LRA');
  if (integrated === undefined || range === undefined)
    throw new MediaError('input_corrupt', "the input's audio could not be measured");
  const peaks = [...block.matchAll(/^lavfi\.r128\.true_peaks_ch\d+=(\S+)$/gm)].map((m) =>
    Number(m[1]),
  );
  const peak = Math.max(0, ...peaks.filter(Number.isFinite));
  return {
    integratedLufs: round(Math.max(GATE_LUFS, integrated)),
    rangeLu: round(range),
    truePeakDbtp: round(peak > 0 ? Math.max(-120, 20 * Math.log10(peak)) : -120),
  };
}

/**
 * Room kept under the ceiling by the limiter of the dynamic mode: a limited waveform comes back
 * from AAC with its true peak up to 0.9 dB higher, from Opus up to 0.7 dB (measured on speech
 * with clicks brought up 20 dB).
 */
export const LIMITER_HEADROOM_DB = 1.5;

/** How close to the target a dynamic mode's measured gain must land, LU. */
export const GAIN_TOLERANCE_LU = 0.3;

/**
 * Linear gain when it keeps the true peak under the ceiling (less the codec's headroom); else
 * `dynamic`, a gain with a true-peak limiter (limitedFilter) whose gain the caller still has to
 * find by measuring (findLimitedGain): the limiter takes loudness off the peaks it holds down.
 * Audio below the gate is left alone.
 */
export function planLoudness(input: LoudnessMeasurement, option: LoudnessOption): LoudnessPlan {
  const targetLufs = option.targetLufs;
  const truePeakDbtp = option.truePeakDbtp ?? DEFAULT_TRUE_PEAK_DBTP;
  const base = { targetLufs, truePeakDbtp, input };
  if (input.integratedLufs <= GATE_LUFS) return { ...base, mode: 'silent' };
  const gainDb = round(targetLufs - input.integratedLufs);
  if (input.truePeakDbtp + gainDb <= truePeakDbtp - CODEC_HEADROOM_DB)
    return { ...base, mode: 'linear', gainDb, filter: `volume=${gainDb}dB` };
  return { ...base, mode: 'dynamic', gainDb, filter: limitedFilter(gainDb, truePeakDbtp) };
}

/**
 * A gain, then a look-ahead limiter (1 ms attack, 50 ms release: it holds peaks down without
 * pumping the speech between them) at four times 48 kHz, where a sample's peak is close to the
 * true peak, then back to 48 kHz.
 */
export function limitedFilter(gainDb: number, truePeakDbtp: number): string {
  const limit = Math.pow(10, (truePeakDbtp - LIMITER_HEADROOM_DB) / 20).toFixed(4);
  return [
    'aresample=192000',
    `volume=${gainDb}dB`,
    `alimiter=limit=${limit}:level=false:attack=1:release=50`,
    'aresample=48000',
  ].join(',');
}

/**
 * The gain of the dynamic mode: the limited audio measured (`measure`, the input through a
 * filter) and the gain moved by what it missed, at most three times.
 */
export async function findLimitedGain(
  plan: LoudnessPlan,
  measure: (filter: string) => Promise<LoudnessMeasurement>,
): Promise<LoudnessPlan> {
  let gainDb = plan.gainDb ?? 0;
  for (let step = 0; step < 3; step++) {
    const measured = await measure(limitedFilter(gainDb, plan.truePeakDbtp));
    const missed = plan.targetLufs - measured.integratedLufs;
    if (Math.abs(missed) <= GAIN_TOLERANCE_LU) break;
    gainDb = round(gainDb + missed);
  }
  return { ...plan, gainDb, filter: limitedFilter(gainDb, plan.truePeakDbtp) };
}

/** The report of a plan, once the output's audio has been measured. */
export function loudnessReport(plan: LoudnessPlan, output: LoudnessMeasurement): LoudnessReport {
  const { filter: _filter, ...report } = plan;
  return { ...report, output };
}

async function readTail(path: string, bytes: number): Promise<string> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    await file.read(buffer, 0, length, size - length);
    return buffer.toString('utf8');
  } finally {
    await file.close();
  }
}

const round = (n: number): number => Math.round(n * 100) / 100;
