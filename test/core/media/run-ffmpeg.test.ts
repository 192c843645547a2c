import { expect } from 'chai';
import { MediaError } from '../../../services/core/errors.ts';
import { createFfmpegRunner } from '../../../services/core/media/run-ffmpeg.ts';

const runFfmpeg = createFfmpegRunner(process.env['TEST_FFMPEG'] ?? 'ffmpeg', {
  memoryLimitBytes: 2 * 1024 ** 3,
});
const frames = (seconds: number): string[] => [
  '-f',
  'lavfi',
  '-i',
  `testsrc2=size=64x36:rate=10:duration=${seconds}`,
  '-f',
  'rawvideo',
  '-pix_fmt',
  'gray',
  'pipe:1',
];

describe('ffmpeg runner with stdout as data', function () {
  this.timeout(30_000);

  it('hands over every byte of stdout and still reports progress (on fd 3)', async () => {
    let bytes = 0;
    const progress: number[] = [];
    await runFfmpeg(frames(2), {
      signal: new AbortController().signal,
      stallTimeoutMs: 10_000,
      onStdout: (chunk) => (bytes += chunk.length),
      onProgress: (p) => progress.push(p.outTimeSeconds),
    });
    expect(bytes).to.equal(20 * 64 * 36);
    expect(progress.at(-1)).to.be.closeTo(2, 0.2);
  });

  it("a consumer that throws stops ffmpeg, and its error is the run's", async () => {
    const error = await runFfmpeg(frames(600), {
      signal: new AbortController().signal,
      stallTimeoutMs: 10_000,
      onStdout: () => {
        throw new MediaError('input_unsupported', 'bad frames');
      },
    }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).message).to.equal('bad frames');
  });
});
