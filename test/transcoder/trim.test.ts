// Issue 30's trimming through the transcode handler with real ffmpeg: the output's first and last
// frames found among the input's frames, the audio ending with the video.
import { expect } from 'chai';
import { join } from 'node:path';
import type {
  JobRequested,
  TranscodeSpec,
  TrimOption,
} from '../../services/core/contracts/types.generated.ts';
import { MediaError } from '../../services/core/errors.ts';
import { createTranscodeHandler } from '../../services/transcoder/handle-transcode.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { transcodeRequested } from '../support/job-requests.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { testJobContext } from '../support/job-context.ts';
import { generateClip } from '../support/generate-clip.ts';
import { closestFrame, frameBytes, frameCount, streamSpan } from '../support/frame-match.ts';

/** Where a trim must start and end, in frames of a 25 fps input. */
export async function expectTrimmedFrames(
  inputPath: string,
  outputPath: string,
  trim: { startSeconds: number; endSeconds: number },
): Promise<void> {
  const first = Math.round(trim.startSeconds * 25);
  const last = Math.round(trim.endSeconds * 25) - 1;
  const frames = await frameCount(outputPath);
  expect(frames, 'frames in the output').to.be.within(last - first, last - first + 2);
  const head = await closestFrame(
    inputPath,
    [first - 1, first, first + 1],
    await frameBytes(outputPath, 0),
  );
  expect(head.index, `first frame ${JSON.stringify(head.differences)}`).to.equal(first);
  const tail = await closestFrame(
    inputPath,
    [last - 1, last, last + 1],
    await frameBytes(outputPath, frames - 1),
  );
  expect(tail.index, `last frame ${JSON.stringify(tail.differences)}`).to.be.within(last, last + 1);
  const spans = {
    video: await streamSpan(outputPath, 'v:0'),
    audio: await streamSpan(outputPath, 'a:0'),
  };
  const seconds = trim.endSeconds - trim.startSeconds;
  const says = JSON.stringify(spans);
  // WebM keeps the input's timing: from this TS input its video starts 47 ms after zero and its
  // Opus 7 ms before (the input's own 23 ms between video and audio, and Opus's priming), with
  // or without a trim.
  expect(spans.video[0], `video start ${says}`).to.be.within(0, 0.05);
  expect(spans.video[1] - spans.video[0], `video length ${says}`).to.be.closeTo(seconds, 0.041);
  expect(spans.audio[0], `audio start ${says}`).to.be.closeTo(spans.video[0], 0.06);
  expect(spans.audio[1], `audio end ${says}`).to.be.closeTo(spans.video[1], 0.05);
}

describe('trimming a transcode (services/core/media/trim.ts)', function () {
  this.timeout(180_000);
  let files: TestServer;
  const handler = createTranscodeHandler(testMediaJobDeps());
  const ctx = testJobContext('transcode');
  const job = (input: string, output: string, spec: TranscodeSpec): JobRequested =>
    transcodeRequested(files, input, output, {
      jobId: '00000000-0000-4000-8000-000000000032',
      transcode: { ...spec, quality: { report: false } },
    });

  before(async () => {
    files = await startTestServer();
    const clip = { seconds: 10, width: 320, height: 180, audio: true };
    await generateClip(join(files.dir, 'in.mp4'), clip);
    // MPEG-TS starts its timestamps at 1.4 s: the trim counts from the first frame.
    await generateClip(join(files.dir, 'in.ts'), { ...clip, format: 'mpegts' });
  });
  after(() => files.close());

  const cases = [
    {
      input: 'in.mp4',
      encoder: 'h264',
      container: 'mp4',
      trim: { startSeconds: 2.52, endSeconds: 6.04 },
    },
    {
      input: 'in.ts',
      encoder: 'vp9',
      container: 'webm',
      trim: { startSeconds: 3.28, durationSeconds: 4 },
    },
  ] as const;
  for (const c of cases) {
    it(`${c.encoder}/${c.container} from ${c.input}, ${JSON.stringify(c.trim)}: first and last frame as asked, audio ends with the video`, async () => {
      const name = `out-${c.encoder}.${c.container}`;
      const spec = { encoder: c.encoder, container: c.container, bitrateKbps: '1000' } as const;
      const result = await handler(job(c.input, name, { ...spec, trim: c.trim }), ctx);
      const endSeconds =
        'endSeconds' in c.trim ? c.trim.endSeconds : c.trim.startSeconds + c.trim.durationSeconds;
      await expectTrimmedFrames(join(files.dir, c.input), join(files.dir, name), {
        startSeconds: c.trim.startSeconds,
        endSeconds,
      });
      expect(result.durationSeconds).to.be.closeTo(endSeconds - c.trim.startSeconds, 0.06);
      expect(result.input?.durationSeconds).to.be.closeTo(10, 0.1);
    });
  }

  const outside: [string, TrimOption, RegExp][] = [
    ['a start past the end', { startSeconds: 12 }, /outside the input, which is 10 s long/],
    ['an end after it', { startSeconds: 8, endSeconds: 10.5 }, /outside the input/],
    [
      'an end before the start',
      { startSeconds: 5, endSeconds: 4 },
      /must be after trim\.startSeconds/,
    ],
  ];
  for (const [name, trim, message] of outside)
    it(`fails with input_too_short on ${name}, before any encode`, async () => {
      const spec = { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' } as const;
      const error = await handler(job('in.mp4', 'out-never.mp4', { ...spec, trim }), ctx).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(MediaError);
      expect((error as MediaError).code).to.equal('input_too_short');
      expect((error as MediaError).message).to.match(message);
    });
});
