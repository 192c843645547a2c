// Issue 30's trimming of an MP4 summary, with real ffmpeg: the summary of a part of the input,
// its segments inside the part and its first frame the input's frame where its first segment
// starts, counted from the trim.
import { expect } from 'chai';
import { join } from 'node:path';
import { createSummaryHandler } from '../../services/summarizer/handle-summary.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { jobRequested } from '../support/job-requests.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { testJobContext } from '../support/job-context.ts';
import { generateClip } from '../support/generate-clip.ts';
import { closestFrame, frameBytes } from '../support/frame-match.ts';

describe('trimming an MP4 summary (services/summarizer/handle-summary.ts)', function () {
  this.timeout(180_000);
  let files: TestServer;
  const handler = createSummaryHandler(testMediaJobDeps());
  const ctx = testJobContext('summary');

  before(async () => {
    files = await startTestServer();
    await generateClip(join(files.dir, 'in.mp4'), {
      seconds: 30,
      width: 320,
      height: 180,
      audio: true,
    });
  });
  after(() => files.close());

  it('12.4 s to 24.4 s: every segment inside those 12 s, the first frame where the first segment starts', async () => {
    const result = await handler(
      jobRequested('summary', files, 'in.mp4', 'cut-summary.mp4', {
        summary: {
          format: 'mp4',
          quality: { report: false },
          trim: { startSeconds: 12.4, endSeconds: 24.4 },
        },
      }),
      ctx,
    );
    const segments = result.segments ?? [];
    expect(segments).to.not.have.length(0);
    for (const s of segments) expect(s.startSeconds + s.durationSeconds).to.be.at.most(12.001);
    const first = Math.round((12.4 + (segments[0]?.startSeconds ?? 0)) * 25);
    const head = await closestFrame(
      join(files.dir, 'in.mp4'),
      [first - 1, first, first + 1],
      await frameBytes(join(files.dir, 'cut-summary.mp4'), 0),
    );
    expect(head.index, JSON.stringify(head.differences)).to.equal(first);
    expect(result.input?.durationSeconds).to.be.closeTo(30, 0.1);
  });
});
