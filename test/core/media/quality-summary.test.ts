import { expect } from 'chai';
import {
  summarizePsnr,
  summarizeSsim,
  summarizeVmaf,
} from '../../../services/core/media/quality-summary.ts';

describe('quality summary', () => {
  it('gives the PSNR of the mean MSE (not the mean of per-frame PSNR) and the worst frame', () => {
    // MSE 1 and 9: mean 5 → 10·log10(255²/5) = 41.1411 dB.
    const frames = [
      { n: 1, mseY: 1, psnrY: 48.1308 },
      { n: 2, mseY: 9, psnrY: 38.5884 },
    ];
    expect(summarizePsnr(frames)).to.deep.equal({ mean: 41.141, min: 38.588 });
    expect(summarizePsnr([{ n: 1, mseY: 0, psnrY: 100 }])).to.deep.equal({ mean: 100, min: 100 });
    expect(summarizePsnr([])).to.equal(undefined);
  });

  it('gives the mean and worst luma SSIM', () => {
    expect(
      summarizeSsim([
        { n: 1, ssimY: 0.99 },
        { n: 2, ssimY: 0.95 },
      ]),
    ).to.deep.equal({ mean: 0.97, min: 0.95 });
  });

  it("gives VMAF's mean, libvmaf's harmonic mean, the nearest-rank 5th percentile and the worst", () => {
    // 40 frames: 38 at 90, one at 50, one at 20; p5 is the 2nd lowest (ceil(0.05·40) = 2).
    const scores = [...Array<number>(38).fill(90), 50, 20];
    const frames = scores.map((vmaf, frame) => ({ frame: frame * 4, vmaf }));
    const harmonic = 40 / (38 / 91 + 1 / 51 + 1 / 21) - 1;
    expect(summarizeVmaf(frames)).to.deep.equal({
      mean: 87.25,
      harmonicMean: Number(harmonic.toFixed(3)),
      p5: 50,
      min: 20,
      framesScored: 40,
    });
    expect(summarizeVmaf([{ frame: 0, vmaf: 101.2 }])).to.include({ mean: 100, min: 100 });
  });
});
