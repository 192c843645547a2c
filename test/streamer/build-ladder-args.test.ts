import { expect } from 'chai';
import { defaultLadder } from '../../services/streamer/ladder.ts';
import { pictureFilters } from '../../services/core/media/picture-filters.ts';
import { qualityArgs } from '../../services/core/media/quality-args.ts';
import {
  buildLadderArgs,
  buildLadderPasses,
  gopFrames,
  ladderReference,
} from '../../services/streamer/build-ladder-args.ts';
import { planThumbnails } from '../../services/streamer/thumbnails.ts';
import { jobInputOf, mediaInfo } from '../support/job-input.ts';

const graphOf = (args: string[]): string => args[args.indexOf('-filter_complex') + 1] ?? '';

const info = mediaInfo({ width: 1280, height: 720 });
const input = jobInputOf('/in/input', info);
const rungs = defaultLadder(info.video);
const base = {
  input,
  rungs,
  encoder: 'h264' as const,
  segmentSeconds: 4,
  outDir: '/o',
  threads: 2,
  passLogPrefix: '/w/ladder-pass',
};

describe('ladder arguments', () => {
  describesInputPictureMadeOnce();

  describesTwoPasses();

  describesRungsQualityReference();
});

function describesInputPictureMadeOnce(): void {
  it('one input, the picture made once at the top size then split and scaled down per rung', () => {
    const args = buildLadderArgs(base);
    expect(args.filter((a) => a === '-i')).to.have.length(1);
    const graph = graphOf(args);
    expect(graph.match(/scale=1280:720:flags=bicubic:in_color_matrix/g)).to.have.length(1);
    expect(graph).to.contain(',split=4[s0][s1][s2][s3];[s0]format=yuv420p[v0];');
    expect(graph).to.contain('[s3]scale=426:240:flags=bicubic,setsar=1,format=yuv420p[v3]');
  });

  it('VBV from each rung, keyframes forced at every segment boundary, one AAC audio rendition', () => {
    const args = buildLadderArgs(base).join(' ');
    expect(args).to.contain('-b:v:0 2800k -maxrate:v:0 3360k -bufsize:v:0 3360k');
    expect(args).to.contain('-b:v:3 400k -maxrate:v:3 480k -bufsize:v:3 480k');
    expect(args).to.contain('-force_key_frames expr:gte(t,n_forced*4) -g 100 -keyint_min 100');
    expect(args).to.contain('-sc_threshold 0');
    expect(args).to.contain('-c:a aac');
    expect(args).to.contain(
      '-var_stream_map v:0,agroup:audio,name:720p v:1,agroup:audio,name:480p v:2,agroup:audio,name:360p v:3,agroup:audio,name:240p a:0,agroup:audio,name:audio',
    );
    expect(gopFrames(29.97, 2)).to.equal(60);
    expect(gopFrames(0, 2)).to.equal(50);
  });

  it('a watermark is drawn once, before the split; thumbnails and the poster are two more branches', () => {
    const args = buildLadderArgs({
      ...base,
      watermark: {
        inputs: ['/w/mark.png'],
        filter: (k) => `[${k}:v]scale=64:32[wm];[in][wm]overlay=16:16[out]`,
      },
      thumbnails: planThumbnails({}, { width: 1280, height: 720 }, 10, {
        width: 1280,
        height: 720,
      }),
    });
    expect(args.filter((a) => a === '-i')).to.have.length(2);
    const graph = graphOf(args);
    expect(graph).to.contain('[in];[1:v]scale=64:32[wm];[in][wm]overlay=16:16[out];[out]split=6');
    expect(graph).to.contain('[st]fps=1/5:round=down:eof_action=pass,scale=160:90');
    expect(graph).to.contain("[sp]select='gte(t\\,2.500)',scale=1280:720");
    expect(args.slice(-3)).to.deep.equal(['-update', '1', '/o/thumbnails/poster.jpg']);
  });
}

function describesTwoPasses(): void {
  describe('two passes', () => {
    const withExtras = {
      ...base,
      watermark: {
        inputs: ['/w/mark.png'],
        filter: (k: number) => `[${k}:v]scale=64:32[wm];[in][wm]overlay=16:16[out]`,
      },
      thumbnails: planThumbnails({}, { width: 1280, height: 720 }, 10, {
        width: 1280,
        height: 720,
      }),
    };

    it('the first analyses the same pictures (watermark included, no thumbnails, no audio) into the null muxer', () => {
      const [analysis, encode] = buildLadderPasses(withExtras);
      expect(encode).to.deep.equal(buildLadderArgs(withExtras));
      expect(analysis.filter((a) => a === '-i')).to.have.length(2);
      expect(graphOf(analysis)).to.contain('[out]split=4[s0][s1][s2][s3];');
      expect(graphOf(analysis)).to.not.contain('[st]');
      expect(analysis).to.include('-an');
      expect(analysis.slice(-3)).to.deep.equal(['-f', 'null', '-']);
      const a = analysis.join(' ');
      const e = encode.join(' ');
      expect(a).to.contain('-pass 1 -passlogfile /w/ladder-pass');
      expect(e).to.contain('-pass 2 -passlogfile /w/ladder-pass');
      // The same encoder, rates, keyframes and frame-rate mode in both.
      expect(e.match(/-level/g)).to.have.length(1);
      for (const part of [
        '-preset slow',
        '-b:v:0 2800k -maxrate:v:0 3360k -bufsize:v:0 3360k',
        // The 720p rung at level 4.1 (x264 would choose 3.1, whose frame cap is under its
        // buffer: h264Level); the rungs that fit level 3 are left to x264.
        '-level:v:0 4.1',
        '-force_key_frames expr:gte(t,n_forced*4) -g 100 -keyint_min 100 -fps_mode:v cfr',
      ]) {
        expect(a).to.contain(part);
        expect(e).to.contain(part);
      }
    });

    it("x265 gets each rung's pass and stats file through its own -x265-params", () => {
      const [analysis, encode] = buildLadderPasses({ ...base, encoder: 'h265' });
      expect(analysis.join(' ')).to.contain(
        '-x265-params:v:3 log-level=error:scenecut=0:open-gop=0:frame-threads=1:pass=1:stats=/w/ladder-pass-3-x265.log:slow-firstpass=0',
      );
      expect(encode.join(' ')).to.contain(
        '-x265-params:v:0 log-level=error:scenecut=0:open-gop=0:frame-threads=1:pass=2:stats=/w/ladder-pass-0-x265.log:slow-firstpass=0',
      );
      expect(encode).to.not.include('-pass');
    });
  });
}

function describesRungsQualityReference(): void {
  describe("the rungs' quality reference", () => {
    const watermark = {
      inputs: ['/w/logo.png'],
      filter: (k: number) => `[in][${k}:v]overlay[out]`,
    };

    it("is the input made into the top rung's picture by the ladder's own filters, without the watermark", () => {
      const { reference } = ladderReference(input, rungs);
      expect(reference.inputs).to.have.length(1);
      expect(reference.inputs[0]?.slice(-2)).to.deep.equal(['-i', '/in/input']);
      const picture = pictureFilters(input, { width: 1280, height: 720 }, 'bicubic');
      expect(reference.chain(4)).to.equal(`[4:0]${picture}`);
      const ladder = graphOf(buildLadderArgs({ ...base, watermark }));
      expect(ladder.startsWith(`[0:0]${picture}[in];`), ladder).to.equal(true);
      expect(reference.chain(4)).not.to.match(/overlay|drawtext|logo/);
    });

    it('scales it to each lower rung as the ladder scales it, the top rung as it is', () => {
      const { rungFilters } = ladderReference(input, rungs);
      expect(rungFilters).to.deep.equal([
        undefined,
        'scale=852:480:flags=bicubic,setsar=1',
        'scale=640:360:flags=bicubic,setsar=1',
        'scale=426:240:flags=bicubic,setsar=1',
      ]);
      const graph = graphOf(buildLadderArgs(base));
      rungFilters.forEach((f, k) => {
        if (f) expect(graph).to.contain(`[s${k}]${f},format=yuv420p[v${k}]`);
      });
    });

    it('gives one metrics run that decodes the input once for the whole ladder', () => {
      const { reference, rungFilters } = ladderReference(input, rungs);
      const args = qualityArgs({
        targets: rungs.map((r, k) => ({
          outputPath: `/w/${r.name}.mp4`,
          logs: { psnr: `/w/${k}.p`, ssim: `/w/${k}.s` },
          ...(rungFilters[k] ? { referenceFilter: rungFilters[k] } : {}),
        })),
        reference,
        vmafSubsample: 4,
        threads: 2,
      });
      expect(args.filter((a) => a === '/in/input')).to.have.length(1);
      // Both sides on the input's frame grid (25 fps here), in microseconds (quality-args.ts).
      const grid = 'settb=AVTB,setpts=round((PTS-STARTPTS)*TB*25)/(25*TB)';
      expect(graphOf(args)).to.contain(`,${grid},split=4[b0][b1][b2][b3];`);
      expect(graphOf(args)).to.contain(`,${grid}[d0_0];`);
    });

    it('needs a rung', () => {
      expect(() => ladderReference(input, [])).to.throw(/at least one rung/);
    });
  });
}
