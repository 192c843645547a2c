import { expect } from 'chai';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { SHORT_CLIP, serveClips } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { H264_MP4 } from '../support/job-requests.ts';
import { startSlowServer, type SlowServer } from '../support/slow-server.ts';

const API_KEY = 'slots-test-key-0123456789';

async function submit(app: AllInOne, body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${app.ingress.url}/transcode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiKey: API_KEY,
      ...H264_MP4,
      ...body,
    }),
  });
  expect(res.status).to.equal(200);
  return String(((await res.json()) as { id: string }).id);
}

describe('all-in-one with WORKER_CONCURRENCY=1: transfers do not hold the ffmpeg slot', function () {
  this.timeout(90_000);
  let files: TestServer;
  let slow: SlowServer;
  let app: AllInOne;
  let dataDir: string;
  let workDir: string;

  before(async () => {
    files = await serveClips({ 'input.mp4': SHORT_CLIP });
    slow = await startSlowServer({ trickleEveryMs: 1000, declaredBytes: 1_000_000 });
    dataDir = await mkdtemp(join(tmpdir(), 'media-slots-data-'));
    workDir = await mkdtemp(join(tmpdir(), 'media-slots-work-'));
    app = await startTestAllInOne(dataDir, {
      API_KEYS: `${API_KEY}:org-slots`,
      WORK_DIR: workDir,
      WORKER_CONCURRENCY: '1',
      TRANSFER_CONCURRENCY: '2',
      MAX_JOB_ATTEMPTS: '1',
      MIN_TRANSFER_BYTES_PER_SECOND: '1000',
      TRANSFER_RATE_WINDOW_MS: '4000',
    });
  });
  after(async () => {
    await app?.close();
    await slow?.close();
    await files?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(workDir, { recursive: true, force: true });
  });

  it('a trickling download is cut with input_unreachable while a job submitted after it finishes meanwhile; a stalled upload is cut and the next job still succeeds', async () => {
    const trickle = await submit(app, {
      inputUrl: `${slow.url}/files/in.mp4`,
      outputUrl: `${files.url}/files/never.mp4`,
      failureUrl: `${files.url}/callbacks/trickle`,
    });
    await new Promise<void>((resolve) => {
      const poll = (): void => void (slow.seen.length > 0 ? resolve() : setTimeout(poll, 50));
      poll();
    });
    const quick = await submit(app, {
      inputUrl: `${files.url}/files/input.mp4`,
      outputUrl: `${files.url}/files/quick.mp4`,
      successUrl: `${files.url}/callbacks/quick`,
    });

    const done = await files.waitForCallback((c) => c.body['jobId'] === quick, 60_000);
    expect(done.body['status']).to.equal('succeeded');
    expect(
      files.callbacks.some((c) => c.body['jobId'] === trickle),
      'the trickling job was still downloading',
    ).to.equal(false);

    const cut = await files.waitForCallback((c) => c.body['jobId'] === trickle, 60_000);
    expect(cut.body['status']).to.equal('failed');
    expect(cut.body).to.deep.include({
      code: 'input_unreachable',
      message: 'the download was slower than 1000 bytes/s over 4 s',
    });

    // An output server that never reads: the upload is aborted by the floor mid-way, and the
    // process lives on to run the next job.
    const stalled = await submit(app, {
      inputUrl: `${files.url}/files/input.mp4`,
      outputUrl: `${slow.url}/files/out.mp4`,
      failureUrl: `${files.url}/callbacks/stalled`,
    });
    const stalledOutcome = await files.waitForCallback((c) => c.body['jobId'] === stalled, 60_000);
    expect(stalledOutcome.body).to.deep.include({ status: 'failed', code: 'output_unreachable' });
    const after = await submit(app, {
      inputUrl: `${files.url}/files/input.mp4`,
      outputUrl: `${files.url}/files/after.mp4`,
      successUrl: `${files.url}/callbacks/after`,
    });
    expect(
      (await files.waitForCallback((c) => c.body['jobId'] === after, 60_000)).body['status'],
    ).to.equal('succeeded');
    expect(await readdir(workDir), 'every job dir is removed').to.deep.equal([]);
  });
});
