import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { JobRequested, TranscodeSpec } from '../../services/core/contracts/types.generated.ts';
import { MediaError } from '../../services/core/errors.ts';
import type { JobContext } from '../../services/core/worker/job-handler.ts';
import { createFfmpegRunner } from '../../services/core/media/run-ffmpeg.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import { createSummaryHandler } from '../../services/summarizer/handle-summary.ts';
import { createTranscodeHandler } from '../../services/transcoder/handle-transcode.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { generateClip } from '../support/generate-clip.ts';
import { transcodeRequested } from '../support/job-requests.ts';
import { TEST_WORK_ROOT, testMediaJobDeps } from '../support/media-job-deps.ts';

const run = promisify(execFile);

let files: TestServer;
const logs: Record<string, unknown>[] = [];
const ctx: JobContext = {
  signal: new AbortController().signal,
  attempt: 1,
  kind: 'transcode',
  span: (_name, work) => work(),
  log: createLogger({
    level: 'debug',
    write: (line) => void logs.push(JSON.parse(line) as Record<string, unknown>),
  }),
  progress: () => undefined,
  openSecret: () => undefined,
  waiting: () => undefined,
  begin: () => Promise.resolve(),
};
const job = (spec: TranscodeSpec, input = 'input.mp4'): JobRequested =>
  transcodeRequested(files, input, 'out.mp4', {
    jobId: '00000000-0000-4000-8000-000000000031',
    transcode: spec,
  });
const h264: TranscodeSpec = { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' };
const failure = async (run: Promise<unknown>): Promise<MediaError> => {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).to.be.instanceOf(MediaError);
  return error as MediaError;
};
/** No local path of any kind: the work dir, /tmp, or any /-rooted path. */
const expectNoPaths = (message: string): void => {
  expect(message).not.to.contain(TEST_WORK_ROOT);
  expect(message).not.to.contain('/tmp');
  expect(message).not.to.match(/(^|[\s:'"(])\/[A-Za-z0-9._-]/);
};

describe('bounded jobs: pixel budget, memory limit, and failure messages fit for callers', function () {
  this.timeout(60_000);

  before(async () => {
    files = await startTestServer();
    await generateClip(join(files.dir, 'input.mp4'), { seconds: 1, width: 320, height: 240 });
    await writeFile(
      join(files.dir, 'garbage.mp4'),
      Buffer.from('this is not a video at all, just text'.repeat(50)),
    );
    await writeFile(join(files.dir, 'not-an-image.png'), 'plain text, not a png');
    await run(process.env['TEST_FFMPEG'] ?? 'ffmpeg', [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'color=red:size=16x16',
      '-frames:v',
      '1',
      '-y',
      join(files.dir, 'logo.png'),
    ]);
  });
  after(() => files.close());
  beforeEach(() => {
    logs.length = 0;
  });

  describesRefusesInputOwnFrame();

  describesFfmpegFailureWatermarkScaled();
});

function describesRefusesInputOwnFrame(): void {
  it('refuses an input whose own frame is over the pixel budget before any ffmpeg runs', async () => {
    let ran = false;
    const deps = testMediaJobDeps({ maxPixels: 320 * 200 });
    const handler = createTranscodeHandler({
      ...deps,
      runFfmpeg: () => ((ran = true), Promise.resolve()),
    });
    const error = await failure(handler(job({ ...h264, width: 160 }), ctx));
    expect(error.code).to.equal('input_too_large');
    expect(error.message).to.equal(
      'the input is 320×240 pixels; the limit is 64000 pixels in area',
    );
    expect(ran).to.equal(false);
  });

  it('refuses an output over the budget made from one given side and the input aspect ratio', async () => {
    const handler = createTranscodeHandler(testMediaJobDeps({ maxPixels: 640 * 400 }));
    const error = await failure(handler(job({ ...h264, width: 640 }), ctx));
    expect(error.code).to.equal('input_too_large');
    expect(error.message).to.match(
      /^the output for this input would be 640×480 pixels; the limit is 256000 pixels/,
    );
    const summary = createSummaryHandler(testMediaJobDeps({ maxPixels: 640 * 400 }));
    const summaryJob: JobRequested = {
      ...job(h264),
      kind: 'summary',
      summary: { format: 'mp4', width: 640 },
    };
    delete summaryJob.transcode;
    expect((await failure(summary(summaryJob, ctx))).code).to.equal('input_too_large');
  });

  it('an ffmpeg over its memory limit fails as memory_limit_exceeded, with stderr only in the log', async () => {
    const handler = createTranscodeHandler(
      testMediaJobDeps({
        runFfmpeg: createFfmpegRunner(process.env['TEST_FFMPEG'] ?? 'ffmpeg', {
          memoryLimitBytes: 64 * 1024 ** 2,
        }),
      }),
    );
    const error = await failure(handler(job({ ...h264, width: 3840, height: 2160 }), ctx));
    expect(error.code).to.equal('memory_limit_exceeded');
    expect(error.message).to.equal('the job needed more memory than the limit of 67108864 bytes');
    expect(JSON.stringify(logs)).to.match(/Cannot allocate memory/);
  });

  it('an unreadable input fails without naming a local path; ffprobe stderr goes to the log', async () => {
    const error = await failure(
      createTranscodeHandler(testMediaJobDeps())(job(h264, 'garbage.mp4'), ctx),
    );
    expect(error.code).to.equal('input_unsupported');
    expect(error.message).to.equal('the input is not a readable video');
    expectNoPaths(error.message);
    const detail = logs.find((r) => r['msg'] === 'job.failure_detail');
    expect(JSON.stringify(detail)).to.contain(TEST_WORK_ROOT);
    expect(JSON.stringify(detail)).to.contain('"stack"');
  });
}

function describesFfmpegFailureWatermarkScaled(): void {
  it('an ffmpeg failure (a watermark scaled past what ffmpeg takes) fails as transcode_failed without stderr', async () => {
    const handler = createTranscodeHandler(testMediaJobDeps());
    // Past the schema's bounds on purpose: only a handler given such a job makes ffmpeg fail this way.
    const error = await failure(
      handler(
        job({
          ...h264,
          watermark: { imageUrl: `${files.url}/files/logo.png`, width: 100000, height: 100000 },
        }),
        ctx,
      ),
    );
    expect(error.code).to.equal('transcode_failed');
    expect(error.message).to.equal('ffmpeg could not process this input');
    expectNoPaths(error.message);
    expect(JSON.stringify(logs.find((r) => r['msg'] === 'job.failure_detail'))).to.contain(
      'Picture size 100000x100000 is invalid',
    );
  });

  it('a watermark image that is not an image fails without naming a local path', async () => {
    const error = await failure(
      createTranscodeHandler(testMediaJobDeps())(
        job({
          ...h264,
          watermark: { imageUrl: `${files.url}/files/not-an-image.png`, width: 16, height: 16 },
        }),
        ctx,
      ),
    );
    expect(error.code).to.equal('watermark_unavailable');
    expectNoPaths(error.message);
  });

  it('an ffmpeg that cannot start is internal, with the spawn error only in the log', async () => {
    const handler = createTranscodeHandler(
      testMediaJobDeps({
        runFfmpeg: createFfmpegRunner('/nonexistent/bin/ffmpeg', {
          memoryLimitBytes: 2 * 1024 ** 3,
        }),
      }),
    );
    const error = await failure(handler(job(h264), ctx));
    expect(error.code).to.equal('internal');
    expect(error.message).to.equal('ffmpeg could not start');
    expect(JSON.stringify(logs.find((r) => r['msg'] === 'job.failure_detail'))).to.contain(
      '/nonexistent/bin/ffmpeg',
    );
  });
}
