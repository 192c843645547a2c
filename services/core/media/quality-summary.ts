import type { QualityReport } from '../contracts/types.generated.ts';
import { PSNR_CEILING_DB, type PsnrFrame, type SsimFrame, type VmafFrame } from './quality-logs.ts';

type Psnr = NonNullable<QualityReport['psnr']>;
type Ssim = NonNullable<QualityReport['ssim']>;
type Vmaf = Omit<NonNullable<QualityReport['vmaf']>, 'model' | 'subsample'>;

/**
 * The PSNR of the mean squared error over all frames (what ffmpeg's psnr filter calls the
 * average: a mean of per-frame figures would be infinite as soon as one frame is perfect), and
 * the worst frame's. Luma of 8-bit pictures: peak 255.
 */
export function summarizePsnr(frames: readonly PsnrFrame[]): Psnr | undefined {
  if (frames.length === 0) return undefined;
  const mse = mean(frames.map((f) => f.mseY));
  const db = mse > 0 ? 10 * Math.log10((255 * 255) / mse) : PSNR_CEILING_DB;
  return {
    mean: round(Math.min(db, PSNR_CEILING_DB), 3),
    min: round(lowest(frames.map((f) => f.psnrY)), 3),
  };
}

export function summarizeSsim(frames: readonly SsimFrame[]): Ssim | undefined {
  if (frames.length === 0) return undefined;
  const values = frames.map((f) => f.ssimY);
  return { mean: round(mean(values), 5), min: round(lowest(values), 5) };
}

/**
 * Mean, libvmaf's harmonic mean (n / Σ 1/(score+1) − 1, as its pooled_metrics), the 5th
 * percentile by nearest rank, and the worst frame.
 */
export function summarizeVmaf(frames: readonly VmafFrame[]): Vmaf | undefined {
  if (frames.length === 0) return undefined;
  const scores = frames.map((f) => f.vmaf).sort((a, b) => a - b);
  const reciprocal = scores.reduce((sum, s) => sum + 1 / (s + 1), 0);
  const p5 = scores[Math.max(0, Math.ceil(0.05 * scores.length) - 1)] ?? 0;
  return {
    mean: round(clamp(mean(scores)), 3),
    harmonicMean: round(clamp(scores.length / reciprocal - 1), 3),
    p5: round(clamp(p5), 3),
    min: round(clamp(scores[0] ?? 0), 3),
    framesScored: scores.length,
  };
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

// Math.min(...values) overflows the stack past some 100 000 arguments: a long output's frames.
function lowest(values: readonly number[]): number {
  return values.reduce((a, b) => (b < a ? b : a), Infinity);
}

const clamp = (score: number): number => Math.min(100, Math.max(0, score));
const round = (n: number, digits: number): number => Number(n.toFixed(digits));
