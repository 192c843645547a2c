import { expect } from 'chai';
import { buildTranscodeArgs, outputSize } from '../../services/transcoder/build-transcode-args.ts';
import { jobInputOf, mediaInfo } from '../support/job-input.ts';

function final(passes: string[][]): string[] {
  expect(passes).to.have.length(2);
  return passes[1] ?? [];
}

/** The value after `flag` in `args` (undefined when absent). */
function after(args: readonly string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args[i + 1];
}

const input = { width: 1920, height: 1080 };

/** The job the two-pass cases vary. */
const twoPassJob = {
  input: jobInputOf('/tmp/in', mediaInfo({ width: 1280, height: 720 })),
  outputPath: '/work/job-1/output.mp4',
  size: { width: 1280, height: 720 },
  threads: 2,
  passLogPrefix: '/work/job-1/pass',
};
const encoders = ['h264', 'h265', 'vp8', 'vp9'] as const;

describe('transcode arguments', () => {
  describesSizesBothAspectKept();

  describesTwoPasses();
});

function describesSizesBothAspectKept(): void {
  it('sizes: both, one (aspect kept, even), none, odd values rounded down to even', () => {
    expect(outputSize({ width: 640, height: 360 }, input)).to.deep.equal({
      width: 640,
      height: 360,
    });
    expect(outputSize({ width: 641 }, input)).to.deep.equal({ width: 640, height: 360 });
    expect(outputSize({ height: 101 }, input)).to.deep.equal({ width: 178, height: 100 });
    expect(outputSize({}, { width: 1279, height: 719 })).to.deep.equal({
      width: 1278,
      height: 718,
    });
  });

  it('h265 in mp4 gets the hvc1 tag; webm gets opus; bitrate is passed in kbps', () => {
    const base = {
      input: jobInputOf('/tmp/in', mediaInfo({ width: 640, height: 360 })),
      outputPath: '/tmp/out',
      size: { width: 640, height: 360 },
      threads: 2,
      passLogPrefix: '/work/job-1/pass',
    };
    const h265 = final(
      buildTranscodeArgs({
        ...base,
        spec: { encoder: 'h265', container: 'mp4', bitrateKbps: '2000' },
      }),
    );
    expect(h265.join(' '))
      .to.contain('-tag:v hvc1')
      .and.contain('-b:v 2000k')
      .and.contain('-c:a aac')
      .and.contain('+faststart');
    const vp9 = final(
      buildTranscodeArgs({
        ...base,
        spec: { encoder: 'vp9', container: 'webm', bitrateKbps: '4000' },
      }),
    );
    expect(vp9.join(' '))
      .to.contain('libvpx-vp9')
      .and.contain('-c:a libopus')
      .and.contain('-f webm');
    const silent = final(
      buildTranscodeArgs({
        ...base,
        input: jobInputOf('/tmp/in', mediaInfo({ width: 640, height: 360 }, { audio: false })),
        spec: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
      }),
    );
    expect(silent).to.include('-an');
    expect(silent.join(' '))
      .to.contain('format=yuv420p')
      .and.contain('-format_whitelist')
      .and.contain('-protocol_whitelist file,pipe');
  });
}

function describesTwoPasses(): void {
  describe('two passes', () => {
    describesNullFirstPassAudio();

    describesBoundsPeaksMaxrate();

    describesVariableFrameRate();
  });
}

function describesNullFirstPassAudio(): void {
  for (const encoder of encoders) {
    it(`${encoder}: a null first pass without audio, then the output; both log into the work dir`, () => {
      const [first = [], second = []] = buildTranscodeArgs({
        ...twoPassJob,
        spec: { encoder, container: 'mp4', bitrateKbps: '2000' },
      });
      expect(first.slice(-3)).to.deep.equal(['-f', 'null', '-']);
      expect(first).to.include('-an').and.not.include('-c:a');
      expect(first).to.not.include(twoPassJob.outputPath);
      expect(second.at(-1)).to.equal(twoPassJob.outputPath);
      expect(second).to.include('-c:a');
      // Both passes see the same picture and the same rate control.
      expect(after(first, '-filter_complex')).to.equal(after(second, '-filter_complex'));
      for (const flag of ['-c:v', '-b:v', '-maxrate', '-bufsize', '-threads'])
        expect(after(first, flag), flag).to.equal(after(second, flag));
      if (encoder === 'h265') {
        expect(after(first, '-x265-params'))
          .to.contain('pass=1')
          .and.contain('stats=/work/job-1/pass-x265.log');
        expect(after(second, '-x265-params'))
          .to.contain('pass=2')
          .and.contain('stats=/work/job-1/pass-x265.log');
      } else {
        expect([after(first, '-pass'), after(second, '-pass')]).to.deep.equal(['1', '2']);
        expect(after(first, '-passlogfile')).to.equal('/work/job-1/pass');
        expect(after(second, '-passlogfile')).to.equal('/work/job-1/pass');
      }
    });
  }

  it('both passes state the frame-rate mode of the final muxer (MP4 constant, WebM and Matroska as timed)', () => {
    // The null muxer alone would pass timestamps through: on a variable-frame-rate input the
    // second pass of an MP4 would then have more frames than the first, which x264 refuses.
    const cases = [
      { encoder: 'h264', container: 'mp4', mode: 'cfr' },
      { encoder: 'vp9', container: 'mp4', mode: 'cfr' },
      { encoder: 'vp9', container: 'webm', mode: 'vfr' },
      { encoder: 'vp8', container: 'mp4', mode: 'vfr' },
    ] as const;
    for (const { encoder, container, mode } of cases) {
      const passes = buildTranscodeArgs({
        ...twoPassJob,
        spec: { encoder, container, bitrateKbps: '1000' },
      });
      expect(
        passes.map((p) => after(p, '-fps_mode:v')),
        `${encoder}/${container}`,
      ).to.deep.equal([mode, mode]);
    }
  });
}

function describesVariableFrameRate(): void {
  it('libvpx in WebM on a variable frame rate is given the request scaled by the nominal rate over the average (libvpxBudgetKbps); the rest the request', () => {
    // A phone's nominal 60 fps, frames at 24 a second on average: libvpx would budget 24/60 of
    // the request.
    const info = mediaInfo({ width: 640, height: 360 });
    const video = { ...info.video, frameRate: 24, variableFrameRate: true, nominalFrameRate: 60 };
    const vfr = jobInputOf('/tmp/in', { ...info, video });
    const cases = [
      { encoder: 'vp9', container: 'webm', rate: '2500k' },
      { encoder: 'vp8', container: 'webm', rate: '2500k' },
      // VP8 in MP4 is written as Matroska, its frames as timed.
      { encoder: 'vp8', container: 'mp4', rate: '2500k' },
      // A constant rate (MP4's mode) repeats frames to the nominal rate: nothing to scale.
      { encoder: 'vp9', container: 'mp4', rate: '1000k' },
      { encoder: 'h264', container: 'mp4', rate: '1000k' },
      { encoder: 'h265', container: 'mp4', rate: '1000k' },
    ] as const;
    for (const { encoder, container, rate } of cases) {
      const passes = buildTranscodeArgs({
        ...twoPassJob,
        input: vfr,
        spec: { encoder, container, bitrateKbps: '1000' },
      });
      expect(
        passes.map((p) => after(p, '-b:v')),
        `${encoder}/${container}`,
      ).to.deep.equal([rate, rate]);
    }
    // A constant-rate input: the request as it is.
    const [, second = []] = buildTranscodeArgs({
      ...twoPassJob,
      spec: { encoder: 'vp9', container: 'webm', bitrateKbps: '1000' },
    });
    expect(after(second, '-b:v')).to.equal('1000k');
  });
}

function describesBoundsPeaksMaxrate(): void {
  it('declares H.264 level 4.1 on both passes where x264 would choose 3.1–4.0 (h264Level)', () => {
    for (const encoder of encoders) {
      const passes = buildTranscodeArgs({
        ...twoPassJob,
        spec: { encoder, container: encoder === 'h264' ? 'mp4' : 'webm', bitrateKbps: '2000' },
      });
      const levels = passes.map((pass) => after(pass, '-level:v'));
      const expected = encoder === 'h264' ? '4.1' : undefined;
      expect(levels, encoder).to.deep.equal([expected, expected]);
    }
  });

  it('bounds peaks: maxrate 2x and a 4 s buffer at the requested bitrate (libvpx: the rate alone)', () => {
    for (const encoder of encoders) {
      const [, second = []] = buildTranscodeArgs({
        ...twoPassJob,
        spec: { encoder, container: 'webm', bitrateKbps: '4000' },
      });
      expect(after(second, '-b:v'), encoder).to.equal('4000k');
      if (encoder === 'vp8' || encoder === 'vp9') {
        // VBV made libvpx spend more on still content; its peaks are held by measurement
        // (test/integration/rate-control.test.ts).
        expect(second, encoder).to.not.include('-maxrate').and.not.include('-bufsize');
        continue;
      }
      expect(after(second, '-maxrate'), encoder).to.equal('8000k');
      expect(after(second, '-bufsize'), encoder).to.equal('16000k');
    }
  });

  it('refuses a pass log prefix that x265 would split', () => {
    expect(() =>
      buildTranscodeArgs({
        ...twoPassJob,
        passLogPrefix: '/work/a:b/pass',
        spec: { encoder: 'h265', container: 'mp4', bitrateKbps: '2000' },
      }),
    ).to.throw(/':' or '='/);
  });

  it('vp8 in mp4 writes Matroska for the remux', () => {
    const [, second = []] = buildTranscodeArgs({
      ...twoPassJob,
      outputPath: '/work/job-1/encoded.mkv',
      spec: { encoder: 'vp8', container: 'mp4', bitrateKbps: '2000' },
    });
    expect(after(second, '-f')).to.equal('matroska');
    expect(second.at(-1)).to.equal('/work/job-1/encoded.mkv');
  });

  it('vp8 in mp4: the soft caption tracks are left to the remux, the burn-in stays', () => {
    const track = {
      path: '/work/job-1/captions-file-0.vtt',
      language: 'en',
      label: 'English',
      source: 'file',
      index: 0,
    } as const;
    const burnIn = { track, fontsDir: '/fonts', fontName: undefined, marginPx: 20 };
    const [, second = []] = buildTranscodeArgs({
      ...twoPassJob,
      outputPath: '/work/job-1/encoded.mkv',
      spec: { encoder: 'vp8', container: 'mp4', bitrateKbps: '2000' },
      captions: { tracks: [track], burnIn },
    });
    expect(second).to.not.include(track.path);
    expect(second).to.not.include('-c:s');
    expect(after(second, '-filter_complex')).to.include(`subtitles=filename=${track.path}`);
  });
}
