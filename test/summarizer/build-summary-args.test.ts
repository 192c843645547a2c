import { expect } from 'chai';
import {
  buildSummaryArgs,
  ONE_PASS_GIF_BYTES,
  type SummaryRender,
} from '../../services/summarizer/build-summary-args.ts';

const render = (o: Partial<SummaryRender> = {}): SummaryRender => ({
  spec: { format: 'gif' },
  inputPath: '/work/input',
  outputPath: '/work/summary.gif',
  palettePath: '/work/palette.png',
  clips: [
    { startSeconds: 2, durationSeconds: 1.5 },
    { startSeconds: 10, durationSeconds: 2 },
  ],
  size: { width: 320, height: 180 },
  hasAudio: true,
  describedByHeader: true,
  videoCodec: 'h264',
  threads: 2,
  ...o,
});

/** How many of a pass's inputs carry `option` (it appears within the 12 arguments before an `-i`). */
const beforeInputs = (args: readonly string[], option: string): number =>
  args.filter((a, i) => a === option && args.slice(i, i + 12).includes('-i')).length;

/** The ffmpeg runs of a render on one ffmpeg (no parts directory), in order. */
const passesOf = (o: SummaryRender): string[][] => buildSummaryArgs(o).steps.flat();

describe('summary render arguments', () => {
  it('decodes each clip on one thread, MP4 and GIF alike', () => {
    for (const spec of [{ format: 'mp4' as const }, { format: 'gif' as const }]) {
      const passes = passesOf(render({ spec }));
      for (const args of passes) {
        const clipThreads = args.filter(
          (a, i) => a === '-threads' && args[i + 1] === '1' && args.indexOf('-i', i) > i,
        );
        expect(clipThreads, args.join(' ')).to.have.length(2);
      }
    }
  });

  it('renders a small GIF in one pass: palette from its own frames, Bayer dither, loops forever', () => {
    const passes = passesOf(render());
    expect(passes).to.have.length(1);
    const args = passes[0] ?? [];
    const graph = args[args.indexOf('-filter_complex') + 1] ?? '';
    expect(graph).to.match(
      /split\[p0\]\[p1\];\[p0\].*palettegen=stats_mode=diff\[pal\];\[p1\]\[pal\]paletteuse=dither=bayer/,
    );
    expect(args.slice(args.indexOf('-loop'), args.indexOf('-loop') + 2)).to.deep.equal([
      '-loop',
      '0',
    ]);
    expect(args).to.not.include('/work/palette.png');
  });

  it('gives a GIF whose frames would exceed the one-pass budget a palette pass of its own', () => {
    // 3.5 s at 12 fps of 1920×1080: 42 frames × 8.3 MB, over the budget.
    const wide = render({ size: { width: 1920, height: 1080 } });
    expect(42 * 1920 * 1080 * 4).to.be.above(ONE_PASS_GIF_BYTES);
    const passes = passesOf(wide);
    expect(passes).to.have.length(2);
    const [palette = [], gif = []] = passes;
    // The palette pass decodes like the analysis and writes one 16×16 image.
    expect(beforeInputs(palette, '-skip_frame')).to.equal(2);
    expect(palette[palette.indexOf('-skip_frame') + 1]).to.equal('bidir');
    expect(palette.at(-1)).to.equal('/work/palette.png');
    expect(palette[palette.indexOf('-filter_complex') + 1]).to.match(
      /palettegen=stats_mode=diff\[v\]$/,
    );
    // The render reads the palette as its third input and holds no frames for it.
    const graph = gif[gif.indexOf('-filter_complex') + 1] ?? '';
    expect(gif[gif.indexOf('/work/palette.png') - 1]).to.equal('-i');
    expect(graph).to.match(/\[out\]\[2:v\]paletteuse=dither=bayer/);
    expect(graph).to.not.include('palettegen');
    expect(beforeInputs(gif, '-skip_frame')).to.equal(0);
    expect(gif.at(-1)).to.equal('/work/summary.gif');
    const { palettePath: _unused, ...withoutPalette } = wide;
    expect(() => buildSummaryArgs(withoutPalette)).to.throw(/palette path/);
  });

  it('a two-pass GIF with an image watermark reads the palette after the watermark image', () => {
    const watermark = {
      inputs: ['/work/logo.png'],
      filter: (k: number) => `[in][${k}:v]overlay[out]`,
    };
    const [palette = [], gif = []] = passesOf(
      render({ size: { width: 1920, height: 1080 }, watermark }),
    );
    expect(palette[palette.indexOf('-filter_complex') + 1]).to.include('[in][2:v]overlay[out]');
    const graph = gif[gif.indexOf('-filter_complex') + 1] ?? '';
    expect(graph).to.include('[in][2:v]overlay[out];[out][3:v]paletteuse');
  });

  it('a palette pass of another codec skips what is safe for it; of an unknown one, nothing', () => {
    const wide = { size: { width: 1920, height: 1080 } };
    const hevc = passesOf(render({ ...wide, videoCodec: 'hevc' }))[0] ?? [];
    expect(hevc[hevc.indexOf('-skip_frame') + 1]).to.equal('noref');
    const vp9 = passesOf(render({ ...wide, videoCodec: 'vp9' }))[0] ?? [];
    expect(vp9).to.not.include('-skip_frame');
  });
});
