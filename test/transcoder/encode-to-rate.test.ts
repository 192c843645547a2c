import { expect } from 'chai';
import type { TranscodeSpec } from '../../services/core/contracts/types.generated.ts';
import { OVERSHOOT_LIMIT, correctedTargetKbps } from '../../services/transcoder/rate-control.ts';
import { encodeToRate, type EncodeStep } from '../../services/transcoder/encode-to-rate.ts';
import { jobInputOf, mediaInfo } from '../support/job-input.ts';

/** The value after `flag` in `args` (undefined when absent). */
const after = (args: readonly string[], flag: string): string | undefined => {
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args[i + 1];
};

describe('encode to rate (final pass again after an overshoot)', () => {
  it('corrects an overshoot past the limit, scaled by the miss; leaves the rest alone', () => {
    expect(correctedTargetKbps(1000, 1071)).to.equal(934);
    expect(correctedTargetKbps(1000, 1000 * (1 + OVERSHOOT_LIMIT))).to.equal(undefined);
    expect(correctedTargetKbps(1000, 1039)).to.equal(undefined);
    // An undershoot is the picture's ceiling or within the rule: never filled up.
    expect(correctedTargetKbps(1000, 600)).to.equal(undefined);
    expect(correctedTargetKbps(1000, Number.NaN)).to.equal(undefined);
    // From an earlier target, scaled again.
    expect(correctedTargetKbps(1000, 1100, 934)).to.equal(849);
  });

  const options = (encoder: TranscodeSpec['encoder']) => ({
    spec: {
      encoder,
      container: encoder === 'vp9' || encoder === 'vp8' ? ('webm' as const) : ('mp4' as const),
      bitrateKbps: '1000' as const,
    },
    input: jobInputOf('/tmp/in', mediaInfo({ width: 640, height: 360 })),
    outputPath: '/tmp/job/out',
    size: { width: 640, height: 360 },
    threads: 2,
    passLogPrefix: '/tmp/job/pass',
  });

  async function runWith(
    encoder: TranscodeSpec['encoder'],
    delivered: number,
  ): Promise<{ steps: [EncodeStep, readonly string[]][]; outcome: unknown }> {
    const steps: [EncodeStep, readonly string[]][] = [];
    const outcome = await encodeToRate(options(encoder), {
      run: async (args, step) => {
        steps.push([step, args]);
        return step === 'retry' ? 5.2 : 5;
      },
      videoKbps: async (path) => {
        expect(path).to.equal('/tmp/job/out');
        return delivered;
      },
    });
    return { steps, outcome };
  }

  it('runs both passes and stops there when the rate is met', async () => {
    const { steps, outcome } = await runWith('h264', 1020);
    expect(steps.map(([s]) => s)).to.deep.equal(['analyse', 'encode']);
    expect(outcome).to.deep.equal({ decoded: 5 });
  });

  it('runs the final pass again from the same statistics at the corrected target', async () => {
    for (const encoder of ['h264', 'h265', 'vp8', 'vp9'] as const) {
      const { steps, outcome } = await runWith(encoder, 1071);
      expect(steps.map(([s]) => s)).to.deep.equal(['analyse', 'encode', 'retry']);
      const [, final] = steps[1] ?? [];
      const [, retry] = steps[2] ?? [];
      expect(after(final ?? [], '-b:v')).to.equal('1000k');
      expect(after(retry ?? [], '-b:v')).to.equal('934k');
      // The same output and the second pass of the same statistics.
      expect(retry?.at(-1)).to.equal('/tmp/job/out');
      const pass = (args: readonly string[] | undefined): string | undefined =>
        encoder === 'h265' ? after(args ?? [], '-x265-params') : after(args ?? [], '-pass');
      expect(pass(retry)).to.equal(pass(final));
      expect(outcome).to.deep.equal({
        decoded: 5.2,
        retry: { firstKbps: 1071, targetKbps: 934 },
      });
    }
  });
});
