import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { JobRequested, SummarySpec } from '../../services/core/contracts/types.generated.ts';
import type { JobContext } from '../../services/core/jobs/run-job-worker.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createSummaryHandler } from '../../services/summarizer/handle-summary.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { ffprobe, generateClip } from '../support/generate-clip.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';

describe('summary handler with real ffmpeg', function () {
  this.timeout(120_000);
  let files: TestServer;
  const handler = createSummaryHandler(testMediaJobDeps());
  const ctx: JobContext = { signal: new AbortController().signal, attempt: 1, log: silentLogger, progress: () => {}, openSecret: () => undefined };
  const job = (summary: SummarySpec, output: string): JobRequested => ({
    jobId: '00000000-0000-4000-8000-000000000002', kind: 'summary', orgId: 'o', attempt: 1, submittedAt: new Date().toISOString(),
    input: { url: `${files.url}/files/input.mp4` }, output: { url: `${files.url}/files/${output}` }, summary,
  });

  before(async () => {
    files = await startTestServer();
    await generateClip(join(files.dir, 'input.mp4'), { seconds: 30, width: 320, height: 240, audio: true });
  });
  after(() => files.close());

  it('mp4 summary keeps audio, lists its segments in order, and has their total length', async () => {
    const result = await handler(job({ format: 'mp4' }, 's.mp4'), ctx);
    const probed = await ffprobe(join(files.dir, 's.mp4'));
    expect(probed.streams.map((s) => s.codec_name).sort()).to.deep.equal(['aac', 'h264']);
    const total = (result.segments ?? []).reduce((t, s) => t + s.durationSeconds, 0);
    expect(result.segments).to.have.length(3);
    expect(Number(probed.format.duration)).to.be.closeTo(total, 0.3);
    expect(result.width).to.equal(320);
  });

  it('mp4 summary with removeAudio has no audio stream; width and a text watermark apply', async () => {
    await handler(job({ format: 'mp4', removeAudio: true, width: 161, watermark: { text: 'demo: 50%', fontSize: 12 } }, 'quiet.mp4'), ctx);
    const probed = await ffprobe(join(files.dir, 'quiet.mp4'));
    expect(probed.streams.map((s) => s.codec_type)).to.deep.equal(['video']);
    expect(probed.streams[0]?.width).to.equal(160);
  });

  it('gif summary with an image watermark', async () => {
    await promisify(execFile)('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'color=c=red:s=20x10', '-frames:v', '1', '-y', join(files.dir, 'logo.png')]);
    const result = await handler(job({ format: 'gif', watermark: { imageUrl: `${files.url}/files/logo.png`, width: 20, height: 10, opacity: 0.5 } }, 's.gif'), ctx);
    expect(result.format).to.equal('gif');
    const probed = await ffprobe(join(files.dir, 's.gif'));
    expect(probed.streams[0]?.codec_name).to.equal('gif');
    expect(probed.streams[0]?.width).to.equal(320);
  });
});
