import { expect } from 'chai';
import { pictureFilters } from '../../services/core/media/picture-filters.ts';
import {
  buildSummaryArgs,
  GIF_FPS,
  GIF_NO_VMAF,
  summaryQualityOptions,
  summaryReference,
  type SummaryRender,
} from '../../services/summarizer/build-summary-args.ts';
import { audioInfo, videoInfo } from '../support/job-input.ts';

const render = (o: Partial<SummaryRender> = {}): SummaryRender => ({
  spec: { format: 'gif' },
  inputPath: '/work/input',
  outputPath: '/work/summary.gif',
  palettePath: '/work/palette.png',
  paletteSamples: { path: '/work/samples.rgb', width: 160, height: 90 },
  clips: [
    { startSeconds: 2, durationSeconds: 1.5 },
    { startSeconds: 10, durationSeconds: 2 },
  ],
  size: { width: 320, height: 180 },
  picture: { video: videoInfo({ width: 640, height: 360 }) },
  audio: audioInfo(),
  describedByHeader: true,
  threads: 2,
  ...o,
});

/** The ffmpeg runs of a render on one ffmpeg (no parts directory), in order. */
const passesOf = (o: SummaryRender): string[][] => buildSummaryArgs(o).steps.flat();

describe('summary render arguments', () => {
  it('decodes each clip on one thread, MP4 and GIF alike', () => {
    for (const spec of [{ format: 'mp4' as const }, { format: 'gif' as const }]) {
      // The GIF's palette step reads samples, not clips.
      const passes = passesOf(render({ spec })).filter((a) => !a.join(' ').includes('palettegen'));
      expect(passes).to.have.length(1);
      for (const args of passes) {
        const clipThreads = args.filter(
          (a, i) => a === '-threads' && args[i + 1] === '1' && args.indexOf('-i', i) > i,
        );
        expect(clipThreads, args.join(' ')).to.have.length(2);
      }
    }
  });

  it('makes a GIF palette from the samples (watermark-free: as they are), then renders on it; loops forever', () => {
    const passes = passesOf(render());
    expect(passes).to.have.length(2);
    const [palette = [], gif = []] = passes;
    // The palette step reads only the raw samples, at their size, and writes one image.
    expect(palette.filter((a) => a === '-i')).to.have.length(1);
    expect(palette.slice(palette.indexOf('-f'), palette.indexOf('-f') + 2)).to.deep.equal([
      '-f',
      'rawvideo',
    ]);
    expect(palette[palette.indexOf('-video_size') + 1]).to.equal('160x90');
    expect(palette[palette.indexOf('-i') + 1]).to.equal('/work/samples.rgb');
    expect(palette[palette.indexOf('-format_whitelist') + 1]).to.equal('rawvideo');
    expect(palette[palette.indexOf('-filter_complex') + 1]).to.equal(
      '[0:v]palettegen=stats_mode=full[v]',
    );
    expect(palette.at(-1)).to.equal('/work/palette.png');
    // The render reads the palette after the clips and holds no frames for it.
    const graph = gif[gif.indexOf('-filter_complex') + 1] ?? '';
    expect(gif[gif.indexOf('/work/palette.png') - 1]).to.equal('-i');
    expect(graph).to.match(
      /fps=12,scale=320:180:flags=lanczos.*\[out\]\[2:v\]paletteuse=dither=bayer/,
    );
    expect(graph).to.not.include('palettegen');
    expect(gif).to.not.include('-skip_frame');
    expect(gif.slice(gif.indexOf('-loop'), gif.indexOf('-loop') + 2)).to.deep.equal(['-loop', '0']);
    expect(gif.at(-1)).to.equal('/work/summary.gif');
    const { paletteSamples: _samples, ...withoutSamples } = render();
    expect(() => buildSummaryArgs(withoutSamples)).to.throw(/palette samples/);
    const { palettePath: _palette, ...withoutPalette } = render();
    expect(() => buildSummaryArgs(withoutPalette)).to.throw(/palette path/);
  });

  it('a GIF with an image watermark draws it on the samples at the output size before palettegen', () => {
    const watermark = {
      inputs: ['/work/logo.png'],
      filter: (k: number) => `[in][${k}:v]overlay[out]`,
    };
    const [palette = [], gif = []] = passesOf(render({ watermark }));
    expect(palette[palette.indexOf('/work/logo.png') - 1]).to.equal('-i');
    expect(palette[palette.indexOf('-filter_complex') + 1]).to.equal(
      '[0:v]scale=320:180:flags=neighbor,setsar=1[in];[in][1:v]overlay[out];[out]palettegen=stats_mode=full[v]',
    );
    const graph = gif[gif.indexOf('-filter_complex') + 1] ?? '';
    expect(graph).to.include('[in][2:v]overlay[out];[out][3:v]paletteuse');
  });

  it('a GIF in parts: each part reads the one palette; the parts are joined after', () => {
    const plan = buildSummaryArgs(render({ partsDir: '/work' }));
    expect(plan.steps.map((s) => s.length)).to.deep.equal([1, 2]);
    for (const part of plan.steps[1] ?? [])
      expect(part[part.indexOf('/work/palette.png') - 1]).to.equal('-i');
    expect(plan.gifParts).to.deep.equal(['/work/part0.gif', '/work/part1.gif']);
  });
});

describe('summary quality reference and options', () => {
  const watermark = {
    inputs: ['/work/logo.png'],
    filter: (k: number) => `[in][${k}:v]overlay[out]`,
  };
  const mp4 = render({ spec: { format: 'mp4' }, outputPath: '/work/summary.mp4', watermark });
  const gif = render({ watermark });

  it("reads the render's clips the same way, one input each, and never the watermark", () => {
    for (const o of [mp4, gif]) {
      const ref = summaryReference(o);
      const clipInputs = ref.inputs.map((i) => i.join(' '));
      expect(clipInputs).to.have.length(2);
      expect(clipInputs[0]).to.match(/-threads 1 .*-ss 2 -t 1\.5 -i \/work\/input$/);
      expect(clipInputs[1]).to.match(/-ss 10 -t 2 -i \/work\/input$/);
      const rendered = (passesOf(o).at(-1) ?? []).join(' ');
      for (const input of ref.inputs) expect(rendered).to.contain(input.join(' '));
      expect(ref.inputs.flat()).not.to.include('/work/logo.png');
      expect(ref.chain(1)).not.to.match(/overlay|drawtext|\[in\]|\[out\]/);
    }
  });

  it("joins the clips, numbered from the first reference input, through the render's own picture filters", () => {
    for (const o of [mp4, gif]) {
      const picture = pictureFilters(
        o.picture,
        o.size,
        'lanczos',
        o.spec.format === 'gif' ? `fps=${GIF_FPS}` : undefined,
      );
      expect(summaryReference(o).chain(1)).to.equal(
        `[1:0]setpts=PTS-STARTPTS,${picture}[qc0];[2:0]setpts=PTS-STARTPTS,${picture}[qc1];` +
          '[qc0][qc1]concat=n=2:v=1:a=0',
      );
      const graph = (passesOf(o).at(-1) ?? []).join(' ');
      expect(graph).to.contain(`[0:0]setpts=PTS-STARTPTS,${picture}[c0]`);
    }
    expect(summaryReference(gif).chain(1)).to.contain('fps=12');
    expect(summaryReference(mp4).chain(1)).not.to.contain('fps=');
  });

  it("puts a GIF's frames back on its 12 frames/s and makes them BT.709 YUV, and names VMAF missing; an MP4 needs neither", () => {
    expect(summaryQualityOptions({ format: 'gif' })).to.deep.equal({
      outputFilter: 'fps=12,scale=out_color_matrix=bt709:out_range=tv,format=yuv420p',
      vmafNotApplicable: GIF_NO_VMAF,
    });
    expect(GIF_NO_VMAF).to.match(/GIF/);
    expect(summaryQualityOptions({ format: 'mp4' })).to.deep.equal({});
  });
});
