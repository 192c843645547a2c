import { expect } from 'chai';
import { inputReference, qualityArgs } from '../../../services/core/media/quality-args.ts';
import { pictureFilters } from '../../../services/core/media/picture-filters.ts';
import { jobInputOf, mediaInfo, videoInfo } from '../../support/job-input.ts';

describe('quality args', () => {
  const reference = { inputs: [['-i', 'ref.mp4']], chain: (first: number) => `[${first}:0]null` };
  const logs = { psnr: '/w/p.log', ssim: '/w/s.log' };
  const graphOf = (args: string[]): string => args[args.indexOf('-filter_complex') + 1] ?? '';

  it('passes the output through psnr, ssim and libvmaf, the reference split to each, to a null muxer', () => {
    const args = qualityArgs({
      outputPath: '/w/out.mp4',
      reference,
      logs: { ...logs, vmaf: '/w/v.csv' },
      vmafSubsample: 4,
      threads: 3,
    });
    expect(args.indexOf('/w/out.mp4')).to.be.lessThan(args.indexOf('ref.mp4'));
    expect(args).to.include.members(['-format_whitelist', '-protocol_whitelist']);
    expect(graphOf(args).split(';')).to.deep.equal([
      '[0:v:0]format=yuv420p,setpts=PTS-STARTPTS[d0]',
      '[1:0]null,format=yuv420p,setpts=PTS-STARTPTS,split=3[r0][r1][r2]',
      '[d0][r0]psnr=stats_file=/w/p.log[d1]',
      '[d1][r1]ssim=stats_file=/w/s.log[d2]',
      '[d2][r2]libvmaf=model=version=vmaf_v0.6.1:n_threads=3:n_subsample=4:log_fmt=csv:log_path=/w/v.csv[d3]',
    ]);
    expect(args.slice(args.indexOf('-map'))).to.deep.equal([
      '-map',
      '[d3]',
      '-threads',
      '3',
      '-f',
      'null',
      '-',
    ]);
  });

  it('leaves libvmaf out when there is no VMAF log (an ffmpeg without it)', () => {
    const args = qualityArgs({
      outputPath: '/w/o.webm',
      reference,
      logs,
      vmafSubsample: 1,
      threads: 1,
    });
    expect(graphOf(args)).not.to.contain('libvmaf');
    expect(graphOf(args)).to.contain('split=2[r0][r1]');
    expect(args[args.indexOf('-map') + 1]).to.equal('[d2]');
  });

  it('refuses a log path filters cannot take', () => {
    expect(() =>
      qualityArgs({
        outputPath: 'o',
        reference,
        logs: { ...logs, ssim: "/w/a:b's" },
        vmafSubsample: 1,
        threads: 1,
      }),
    ).to.throw(/characters filters cannot take/);
  });

  it("makes an input's reference with the encode's picture filters at the output size", () => {
    const info = mediaInfo({ width: 1920, height: 1080 });
    const input = jobInputOf('/w/input', { ...info, video: videoInfo(info.video, { index: 2 }) });
    const size = { width: 640, height: 360 };
    const ref = inputReference(input, size);
    expect(ref.inputs).to.have.length(1);
    expect(ref.inputs[0]?.slice(-2)).to.deep.equal(['-i', '/w/input']);
    expect(ref.chain(1)).to.equal(`[1:2]${pictureFilters(input, size, 'bicubic')}`);
  });
});
