import { expect } from 'chai';
import {
  findLimitedGain,
  lastLoudness,
  limitedFilter,
  planLoudness,
} from '../../../services/core/media/loudness.ts';
import { audioFormatFilter } from '../../../services/core/media/audio-format.ts';

const printed = (frames: { I: string; LRA: string; peaks: string[] }[]): string =>
  frames
    .map(
      (f, k) =>
        `frame:${k}   pts:${k * 4800}   pts_time:${k / 10}\n` +
        `lavfi.r128.M=-30.1\nlavfi.r128.S=-31.0\nlavfi.r128.I=${f.I}\nlavfi.r128.LRA=${f.LRA}\n` +
        f.peaks.map((p, ch) => `lavfi.r128.true_peaks_ch${ch}=${p}\n`).join('') +
        `lavfi.r128.true_peak=${f.peaks[0]}\n`,
    )
    .join('');

describe('loudness (services/core/media/loudness.ts)', () => {
  it("reads the last frame's integrated loudness and range, and the highest channel's true peak in dBTP", () => {
    const m = lastLoudness(
      printed([
        { I: '-40.0', LRA: '0.0', peaks: ['0.1', '0.1'] },
        { I: '-23.456', LRA: '5.25', peaks: ['0.5', '0.25'] },
      ]),
    );
    expect(m).to.deep.equal({ integratedLufs: -23.46, rangeLu: 5.25, truePeakDbtp: -6.02 });
  });

  it('reads digital silence as the gate and −120 dBTP, and refuses output with no figures', () => {
    const m = lastLoudness(printed([{ I: '-70.000', LRA: '0.000', peaks: ['0.000', '0.000'] }]));
    expect(m).to.deep.equal({ integratedLufs: -70, rangeLu: 0, truePeakDbtp: -120 });
    expect(() => lastLoudness('')).to.throw("the input's audio could not be measured");
  });

  it('a linear gain when the true peak stays 0.5 dB under the ceiling after it, else a limited gain', () => {
    const input = { integratedLufs: -38, rangeLu: 3, truePeakDbtp: -17 };
    const linear = planLoudness(input, { targetLufs: -23 });
    expect(linear).to.include({ mode: 'linear', gainDb: 15, filter: 'volume=15dB' });
    expect(linear.truePeakDbtp).to.equal(-1);
    // −17 + 15 = −2 ≤ −1.5; at −16.4 the peak would land 0.1 dB into the headroom.
    const limited = planLoudness({ ...input, truePeakDbtp: -16.4 }, { targetLufs: -23 });
    expect(limited).to.include({ mode: 'dynamic', gainDb: 15 });
    expect(limited.filter).to.equal(limitedFilter(15, -1));
    expect(planLoudness({ ...input, integratedLufs: -70 }, { targetLufs: -16 })).to.include({
      mode: 'silent',
    });
    expect(planLoudness({ ...input, integratedLufs: -70 }, { targetLufs: -16 }).filter).to.equal(
      undefined,
    );
  });

  it('the limiter sits 1.5 dB under the ceiling (−2 − 1.5 = −3.5 dBTP) at 192 kHz', () => {
    expect(limitedFilter(6.5, -2)).to.equal(
      'aresample=192000,volume=6.5dB,alimiter=limit=0.6683:level=false:attack=1:release=50,aresample=48000',
    );
  });

  it('finds the limited gain by measuring: moves by what each measure missed, stops within 0.3 LU or after three', async () => {
    const plan = planLoudness(
      { integratedLufs: -32, rangeLu: 2, truePeakDbtp: -3 },
      { targetLufs: -16 },
    );
    // A limiter that takes 4 LU off at any gain: the second gain is 4 dB higher and lands.
    const seen: string[] = [];
    const found = await findLimitedGain(plan, (filter) => {
      seen.push(filter);
      const gain = Number(/volume=(-?[\d.]+)dB/.exec(filter)?.[1]);
      return Promise.resolve({ integratedLufs: -32 + gain - 4, rangeLu: 2, truePeakDbtp: -2.5 });
    });
    expect(found.gainDb).to.equal(20);
    expect(seen).to.have.length(2);
    expect(found.filter).to.equal(limitedFilter(20, -1));
    let calls = 0;
    const never = await findLimitedGain(plan, () => {
      calls++;
      return Promise.resolve({ integratedLufs: -40, rangeLu: 2, truePeakDbtp: -2.5 });
    });
    expect(calls).to.equal(3);
    expect(never.gainDb).to.equal(16 + 24 * 3);
  });

  it("goes after the output's layout and rate, which are set again behind it", () => {
    const audio = { index: 1, codec: 'aac', channels: 2, sampleRate: 44100 } as never;
    expect(audioFormatFilter(audio, 'aac')).to.equal(
      'aresample=async=1,aformat=sample_rates=44100:channel_layouts=stereo',
    );
    expect(audioFormatFilter(audio, 'aac', 'volume=3dB')).to.equal(
      'aresample=async=1,aformat=sample_rates=44100:channel_layouts=stereo,volume=3dB,aformat=sample_rates=44100:channel_layouts=stereo',
    );
  });
});
