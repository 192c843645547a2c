import { expect } from 'chai';
import { inputReference, qualityArgs } from '../../../services/core/media/quality-args.ts';
import { BT709_TAGS, pictureFilters } from '../../../services/core/media/picture-filters.ts';
import { jobInputOf, mediaInfo, videoInfo } from '../../support/job-input.ts';

/** The colour tags both sides of a comparison carry. */
const T = BT709_TAGS;

const reference = { inputs: [['-i', 'ref.mp4']], chain: (first: number) => `[${first}:0]null` };
const logs = { psnr: '/w/p.log', ssim: '/w/s.log' };
const graphOf = (args: string[]): string => args[args.indexOf('-filter_complex') + 1] ?? '';

describe('quality args', () => {
  describesPassesOutputThroughPsnr();

  describesDecodesReferenceOnceSeveral();
});

function describesPassesOutputThroughPsnr(): void {
  it('passes the output through psnr, ssim and libvmaf, the reference split to each, to a null muxer', () => {
    const args = qualityArgs({
      targets: [{ outputPath: '/w/out.mp4', logs: { ...logs, vmaf: '/w/v.csv' } }],
      reference,
      vmafSubsample: 4,
      threads: 3,
    });
    expect(args.indexOf('/w/out.mp4')).to.be.lessThan(args.indexOf('ref.mp4'));
    expect(args).to.include.members(['-format_whitelist', '-protocol_whitelist']);
    expect(graphOf(args).split(';')).to.deep.equal([
      '[1:0]null,setpts=PTS-STARTPTS[b0]',
      `[0:v:0]format=yuv420p,${T},setpts=PTS-STARTPTS[d0_0]`,
      `[b0]format=yuv420p,${T},split=3[r0_0][r0_1][r0_2]`,
      '[d0_0][r0_0]psnr=stats_file=/w/p.log[d0_1]',
      '[d0_1][r0_1]ssim=stats_file=/w/s.log[d0_2]',
      '[d0_2][r0_2]libvmaf=model=version=vmaf_v0.6.1:n_threads=3:n_subsample=4:log_fmt=csv:log_path=/w/v.csv[d0_3]',
    ]);
    expect(args.slice(args.indexOf('-map'))).to.deep.equal([
      '-map',
      '[d0_3]',
      '-threads',
      '3',
      '-f',
      'null',
      '-',
    ]);
  });

  it('leaves libvmaf out when there is no VMAF log (an ffmpeg without it)', () => {
    const args = qualityArgs({
      targets: [{ outputPath: '/w/o.webm', logs }],
      reference,
      vmafSubsample: 1,
      threads: 1,
    });
    expect(graphOf(args)).not.to.contain('libvmaf');
    expect(graphOf(args)).to.contain('split=2[r0_0][r0_1]');
    expect(args[args.indexOf('-map') + 1]).to.equal('[d0_2]');
  });

  it("puts a target's output filter before the comparison", () => {
    const args = qualityArgs({
      targets: [{ outputPath: '/w/s.gif', logs, outputFilter: 'fps=12' }],
      reference,
      vmafSubsample: 1,
      threads: 1,
    });
    expect(graphOf(args)).to.contain(`[0:v:0]fps=12,format=yuv420p,${T},setpts=PTS-STARTPTS[d0_0]`);
  });
}

function describesDecodesReferenceOnceSeveral(): void {
  it('decodes the reference once for several outputs: split to each, through its own filter, each output its own input, logs and map', () => {
    const at = (k: number) => ({
      psnr: `/w/${k}p.log`,
      ssim: `/w/${k}s.log`,
      vmaf: `/w/${k}v.csv`,
    });
    const args = qualityArgs({
      targets: [
        { outputPath: '/w/720.mp4', logs: at(0) },
        { outputPath: '/w/360.mp4', logs: at(1), referenceFilter: 'scale=640:360' },
      ],
      reference,
      vmafSubsample: 4,
      threads: 2,
    });
    const files = args.filter((_, i) => args[i - 1] === '-i');
    expect(files).to.deep.equal(['/w/720.mp4', '/w/360.mp4', 'ref.mp4']);
    const graph = graphOf(args).split(';');
    expect(graph[0]).to.equal('[2:0]null,setpts=PTS-STARTPTS,split=2[b0][b1]');
    expect(graph).to.include.members([
      `[0:v:0]format=yuv420p,${T},setpts=PTS-STARTPTS[d0_0]`,
      `[b0]format=yuv420p,${T},split=3[r0_0][r0_1][r0_2]`,
      `[1:v:0]format=yuv420p,${T},setpts=PTS-STARTPTS[d1_0]`,
      `[b1]scale=640:360,format=yuv420p,${T},split=3[r1_0][r1_1][r1_2]`,
      '[d1_0][r1_0]psnr=stats_file=/w/1p.log[d1_1]',
      '[d1_1][r1_1]ssim=stats_file=/w/1s.log[d1_2]',
      '[d1_2][r1_2]libvmaf=model=version=vmaf_v0.6.1:n_threads=2:n_subsample=4:log_fmt=csv:log_path=/w/1v.csv[d1_3]',
    ]);
    expect(graph.filter((f) => f.includes('ref.mp4') || f.startsWith('[2:'))).to.have.length(1);
    expect(args.filter((_, i) => args[i - 1] === '-map')).to.deep.equal(['[d0_3]', '[d1_3]']);
  });

  it('refuses a log path filters cannot take, and a run without outputs', () => {
    expect(() =>
      qualityArgs({
        targets: [{ outputPath: 'o', logs: { ...logs, ssim: "/w/a:b's" } }],
        reference,
        vmafSubsample: 1,
        threads: 1,
      }),
    ).to.throw(/characters filters cannot take/);
    expect(() => qualityArgs({ targets: [], reference, vmafSubsample: 1, threads: 1 })).to.throw(
      /needs an output/,
    );
  });

  it("makes an input's reference with the encode's picture filters at the output size", () => {
    const info = mediaInfo({ width: 1920, height: 1080 });
    const input = jobInputOf('/w/input', { ...info, video: videoInfo(info.video, { index: 2 }) });
    const size = { width: 640, height: 360 };
    const ref = inputReference(input, size);
    expect(ref.inputs).to.have.length(1);
    expect(ref.inputs[0]?.slice(-2)).to.deep.equal(['-i', '/w/input']);
    expect(ref.chain(1)).to.equal(`[1:2]${pictureFilters(input, size, 'bicubic')}`);
    // The frames are put on the grid of the rate they were encoded at: the nominal one.
    expect(ref.frameRate).to.equal(25);
    const vfr = { ...input.video, frameRate: 23.3, nominalFrameRate: 60 };
    expect(inputReference({ ...input, video: vfr }, size).frameRate).to.equal(60);
  });

  it('on a frame grid, both sides are put on it in microseconds before frames pair', () => {
    const args = qualityArgs({
      targets: [{ outputPath: 'out.webm', logs: { psnr: 'p', ssim: 's' } }],
      reference: { ...reference, frameRate: 30 },
      vmafSubsample: 1,
      threads: 1,
    });
    const grid = 'settb=AVTB,setpts=round((PTS-STARTPTS)*TB*30)/(30*TB)';
    expect(graphOf(args)).to.contain(`[1:0]null,${grid}[b0]`);
    expect(graphOf(args)).to.contain(`[0:v:0]format=yuv420p,${T},${grid}[d0_0]`);
  });
}
