// Issue 30's loudness normalisation of an MP4 summary, with real ffmpeg: the summary's audio
// measured by ffmpeg's ebur128 summary apart from the service (transcodes: test/transcoder/).
import { expect } from 'chai';
import { join } from 'node:path';
import { createSummaryHandler } from '../../services/summarizer/handle-summary.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { jobRequested } from '../support/job-requests.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { testJobContext } from '../support/job-context.ts';
import { ebur128Summary, makeLoudnessInput } from '../support/loudness-inputs.ts';

describe('loudness normalisation of an MP4 summary (services/summarizer/handle-summary.ts)', function () {
  this.timeout(180_000);
  let files: TestServer;
  const handler = createSummaryHandler(testMediaJobDeps());
  const ctx = testJobContext('summary');

  before(async () => {
    files = await startTestServer();
    await makeLoudnessInput(join(files.dir, 'quiet.mp4'), 'quiet');
  });
  after(() => files.close());

  it("a quiet input's summary to −23 LUFS: within 0.3 LU, true peak under −1 dBTP, reported against the summary's own audio", async () => {
    const result = await handler(
      jobRequested('summary', files, 'quiet.mp4', 'summary-loud.mp4', {
        summary: { format: 'mp4', quality: { report: false }, loudness: { targetLufs: -23 } },
      }),
      ctx,
    );
    const plain = await handler(
      jobRequested('summary', files, 'quiet.mp4', 'summary-plain.mp4', {
        summary: { format: 'mp4', quality: { report: false } },
      }),
      ctx,
    );
    const before = await ebur128Summary(join(files.dir, 'summary-plain.mp4'));
    const output = await ebur128Summary(join(files.dir, 'summary-loud.mp4'));
    const says = `summary without loudness ${JSON.stringify(before)}, with ${JSON.stringify(output)}`;
    expect(before.integratedLufs, says).to.be.below(-33);
    expect(output.integratedLufs, says).to.be.closeTo(-23, 0.3);
    expect(output.truePeakDbtp, says).to.be.below(-1);
    // The same clips, the same length: only the audio changed.
    expect(result.segments).to.deep.equal(plain.segments);
    expect(result.durationSeconds).to.be.closeTo(plain.durationSeconds, 0.05);
    const report = result.loudness;
    expect(report?.mode).to.equal('linear');
    expect(report?.input.integratedLufs).to.be.closeTo(before.integratedLufs, 0.5);
    expect(report?.output.integratedLufs).to.be.closeTo(output.integratedLufs, 0.3);
    expect(plain.loudness).to.equal(undefined);
  });

  it('a GIF summary ignores the option', async () => {
    const result = await handler(
      jobRequested('summary', files, 'quiet.mp4', 'summary.gif', {
        summary: { format: 'gif', quality: { report: false }, loudness: { targetLufs: -23 } },
      }),
      ctx,
    );
    expect(result.format).to.equal('gif');
    expect(result.loudness).to.equal(undefined);
  });
});
