// Issue 30's loudness normalisation through the stream handler with real ffmpeg: the audio
// rendition measured by ffmpeg's ebur128 summary (the transcode's cases: test/transcoder/).
import { expect } from 'chai';
import { join } from 'node:path';
import { createStreamHandler } from '../../services/streamer/handle-stream.ts';
import {
  joinedRendition,
  startStreamFileServer,
  type StreamFileServer,
} from '../support/stream-file-server.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { testJobContext } from '../support/job-context.ts';
import { ebur128Summary, makeLoudnessInput } from '../support/loudness-inputs.ts';

describe('loudness normalisation of a stream (services/streamer/handle-stream.ts)', function () {
  this.timeout(180_000);
  let files: StreamFileServer;
  const handler = createStreamHandler(testMediaJobDeps());
  const ctx = testJobContext('stream');

  before(async () => {
    files = await startStreamFileServer();
    await makeLoudnessInput(join(files.dir, 'loud.mp4'), 'loud');
  });
  after(() => files.close());

  it('a loud input to −23 LUFS: the audio rendition, every segment joined, within 0.3 LU, true peak under −1 dBTP; the result reports it', async () => {
    const input = await ebur128Summary(join(files.dir, 'loud.mp4'));
    const result = await handler(
      {
        jobId: '00000000-0000-4000-8000-000000000031',
        kind: 'stream',
        orgId: 'o',
        attempt: 1,
        submittedAt: new Date().toISOString(),
        input: { url: `${files.url}/loud.mp4` },
        output: { url: `${files.url}/streams/loud/` },
        stream: {
          segmentSeconds: 2,
          ladder: [{ height: 180, bitrateKbps: 300 }],
          quality: { report: false },
          loudness: { targetLufs: -23 },
        },
      },
      ctx,
    );
    const dir = join(files.dir, 'streams/loud/audio');
    const joined = join(files.dir, 'audio-joined.mp4');
    const { init, segments } = await joinedRendition(dir, joined);
    expect(init).to.have.length(1);
    expect(segments.length).to.be.at.least(4);
    const output = await ebur128Summary(joined);
    const says = `input ${JSON.stringify(input)}, output ${JSON.stringify(output)}`;
    expect(input.integratedLufs + 23, says).to.be.at.least(9.5);
    expect(output.integratedLufs, says).to.be.closeTo(-23, 0.3);
    expect(output.truePeakDbtp, says).to.be.below(-1);
    expect(result.loudness?.mode).to.equal('linear');
    expect(result.loudness?.output.integratedLufs).to.be.closeTo(output.integratedLufs, 0.3);
  });
});
