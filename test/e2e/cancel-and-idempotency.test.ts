import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { longClip, serveClips } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { fileCallbacks, transcodeBody } from '../support/job-requests.ts';

const API_KEY = 'cancel-e2e-key-0123456789';
const run = promisify(execFile);

/** ffmpeg processes that are children of this test process (all-in-one runs in it). */
async function ffmpegChildren(): Promise<string[]> {
  const { stdout } = await run('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)]).catch(
    () => ({ stdout: '' }),
  );
  return stdout.split('\n').filter((line) => /ffmpeg/.test(line));
}

let files: TestServer;
let app: AllInOne;
let dataDir: string;
const start = () =>
  startTestAllInOne(dataDir, {
    API_KEYS: `${API_KEY}:org-c`,
    WORKER_CONCURRENCY: '1',
    TRANSFER_CONCURRENCY: '1',
  });
const post = async (path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(app.ingress.url + path, {
    method: 'POST',
    headers: body
      ? { 'content-type': 'application/json', ...headers }
      : { 'x-api-key': API_KEY, ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const status = async (id: string) =>
  (await (
    await fetch(`${app.ingress.url}/jobs/${id}`, { headers: { 'x-api-key': API_KEY } })
  ).json()) as Record<string, unknown>;
const transcode = (name: string) =>
  transcodeBody(files, 'long.mp4', name, { apiKey: API_KEY, ...fileCallbacks(files) });
const until = async (check: () => Promise<boolean>, ms: number, what: string) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe('all-in-one: cancel with real ffmpeg, idempotency across a restart', function () {
  this.timeout(240_000);

  before(async () => {
    files = await serveClips({ 'long.mp4': longClip(20) });
    dataDir = await mkdtemp(join(tmpdir(), 'media-cancel-e2e-'));
    app = await start();
  });
  after(async () => {
    await app?.close();
    await files?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  describesCancelsRunningEncodeFfmpeg();

  describesIdempotencyKeyKeepsAcknowledgement();
});

function describesCancelsRunningEncodeFfmpeg(): void {
  it('cancels a running encode (ffmpeg killed), a job waiting for a slot and a queued one; each ends canceled with a failure callback', async () => {
    // Two jobs fit the bus slots (1 CPU + 1 transfer): A encodes, B waits for the CPU slot, C is queued.
    const ids: string[] = [];
    for (const name of ['a.mp4', 'b.mp4', 'c.mp4'])
      ids.push(String((await post('/transcode', transcode(name))).body['id']));
    const [a = '', b = '', c = ''] = ids;
    await until(
      async () => Number((await status(a))['progressPercent'] ?? 0) > 3,
      90_000,
      'A to encode',
    );
    expect((await status(c))['status']).to.equal('queued');
    expect(await ffmpegChildren()).to.not.deep.equal([]);

    const canceledAt = performance.now();
    for (const id of [c, b, a]) {
      const res = await post(`/jobs/${id}/cancel`);
      expect(res.status, id).to.equal(202);
    }
    for (const id of ids) {
      const callback = await files.waitForCallback((cb) => cb.body['jobId'] === id, 30_000);
      expect(callback.path, id).to.equal('/callbacks/fail');
      expect(callback.body['code'], id).to.equal('canceled');
    }
    const tookMs = performance.now() - canceledAt;
    expect(tookMs, 'all three end well before A could have finished').to.be.below(15_000);
    for (const id of ids) {
      const s = await status(id);
      expect(s['status'], id).to.equal('canceled');
      expect(s['error'], id).to.deep.include({ code: 'canceled' });
    }
    await until(async () => (await ffmpegChildren()).length === 0, 5000, 'no ffmpeg left');
    // C never started: it has no progress and no processing step.
    expect((await status(c))['progressPercent']).to.equal(undefined);
    expect((await post(`/jobs/${a}/cancel`)).status, 'a finished job').to.equal(409);
    await new Promise((r) => setTimeout(r, 500));
    expect(files.callbacks.filter((cb) => ids.includes(String(cb.body['jobId'])))).to.have.length(
      3,
    );
  });
}

function describesIdempotencyKeyKeepsAcknowledgement(): void {
  it('an Idempotency-Key keeps its acknowledgement across a restart of the process', async () => {
    const body = { ...transcode('idem.mp4'), inputUrl: `${files.url}/files/missing.mp4` };
    const first = await post('/transcode', body, { 'Idempotency-Key': 'restart-me' });
    expect(first.status).to.equal(200);
    await app.close();
    app = await start();
    await until(
      async () => (await status(String(first.body['id'])))['id'] !== undefined,
      10_000,
      'the view to load',
    );
    const again = await post('/transcode', body, { 'Idempotency-Key': 'restart-me' });
    expect(again).to.deep.equal(first);
    const other = await post(
      '/transcode',
      { ...body, bitrateKbps: '2000' },
      { 'Idempotency-Key': 'restart-me' },
    );
    expect(other.status).to.equal(409);
  });
}
