// Issue 30's trimming of a stream, with real ffmpeg: the top rung's segments joined, its first
// and last frames found among the input's; the audio rendition ends with it.
import { expect } from 'chai';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createStreamHandler } from '../../services/streamer/handle-stream.ts';
import {
  joinedRendition,
  startStreamFileServer,
  type StreamFileServer,
} from '../support/stream-file-server.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { testJobContext } from '../support/job-context.ts';
import { generateClip } from '../support/generate-clip.ts';
import { closestFrame, frameBytes, frameCount, streamSpan } from '../support/frame-match.ts';

describe('trimming a stream (services/streamer/handle-stream.ts)', function () {
  this.timeout(180_000);
  let files: StreamFileServer;
  const handler = createStreamHandler(testMediaJobDeps());
  const ctx = testJobContext('stream');

  before(async () => {
    files = await startStreamFileServer();
    await generateClip(join(files.dir, 'in.mp4'), {
      seconds: 10,
      width: 320,
      height: 180,
      audio: true,
    });
  });
  after(() => files.close());

  it('2.52 s to 8.04 s: the rung starts and ends on those frames, the audio ends with it, the result says 5.52 s', async () => {
    const input = join(files.dir, 'in.mp4');
    const result = await handler(
      {
        jobId: '00000000-0000-4000-8000-000000000033',
        kind: 'stream',
        orgId: 'o',
        attempt: 1,
        submittedAt: new Date().toISOString(),
        input: { url: `${files.url}/in.mp4` },
        output: { url: `${files.url}/streams/cut/` },
        stream: {
          segmentSeconds: 2,
          ladder: [{ height: 180, bitrateKbps: 300 }],
          quality: { report: false },
          trim: { startSeconds: 2.52, endSeconds: 8.04 },
        },
      },
      ctx,
    );
    const rungs = (await readdir(join(files.dir, 'streams/cut'))).filter((n) => n !== 'audio');
    const rung = rungs.find((n) => n.endsWith('p'));
    if (!rung) throw new Error(`no rung folder in ${rungs.join(', ')}`);
    const [video, audio] = [join(files.dir, 'v.mp4'), join(files.dir, 'a.mp4')];
    await joinedRendition(join(files.dir, 'streams/cut', rung), video);
    await joinedRendition(join(files.dir, 'streams/cut/audio'), audio);
    const frames = await frameCount(video);
    expect(frames).to.be.within(137, 139);
    const head = await closestFrame(input, [62, 63, 64], await frameBytes(video, 0));
    expect(head.index, JSON.stringify(head.differences)).to.equal(63);
    const tail = await closestFrame(input, [199, 200, 201], await frameBytes(video, frames - 1));
    expect(tail.index, JSON.stringify(tail.differences)).to.be.within(200, 201);
    const [v, a] = [await streamSpan(video, 'v:0'), await streamSpan(audio, 'a:0')];
    expect(a[1], `audio ${JSON.stringify(a)} against video ${JSON.stringify(v)}`).to.be.closeTo(
      v[1],
      0.05,
    );
    expect(result.durationSeconds).to.be.closeTo(5.52, 0.05);
    expect(result.input?.durationSeconds).to.be.closeTo(10, 0.1);
  });
});
