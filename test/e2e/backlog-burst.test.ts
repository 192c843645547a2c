import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { judgeBurst } from '../support/burst-verdict.ts';
import { startTestServer, type ReceivedCallback, type TestServer } from '../support/file-server.ts';
import { generateClip } from '../support/generate-clip.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { postJson, transcodeBody } from '../support/job-requests.ts';
import { startKafkaStack } from '../support/kafka-stack.ts';

// The small form of bench/backlog.ts (issue 7 point 6): a burst of many more jobs than the CPU
// slots, on tiny inputs, in both modes; every job must reach a terminal state with exactly one
// callback at a real HTTP receiver. The 1,000-job burst is `npm run bench:backlog`.

const BURST = 50;
const KEY = 'burst-test-key-0123456789';
// One key sends the whole burst: the per-key rate and per-organisation caps would answer 429.
const NO_CAPS = { RATE_LIMIT_PER_SECOND: '0', MAX_ACTIVE_JOBS_PER_ORG: '0' };

interface Mode {
  submit(body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }>;
  status(id: string): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

async function allInOne(): Promise<Mode> {
  const dataDir = await mkdtemp(join(tmpdir(), 'media-burst-'));
  const app = await startTestAllInOne(dataDir, { API_KEYS: `${KEY}:org-burst`, ...NO_CAPS });
  return {
    submit: (body) => postJson(`${app.ingress.url}/transcode`, { apiKey: KEY, ...body }),
    status: async (id) =>
      (await (
        await fetch(`${app.ingress.url}/jobs/${id}`, { headers: { 'x-api-key': KEY } })
      ).json()) as Record<string, unknown>,
    close: async () => {
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function onKafka(): Promise<Mode> {
  const stack = await startKafkaStack({
    transcoders: 1,
    summarizers: 1,
    notifiers: 1,
    extraEnv: NO_CAPS,
  });
  return {
    submit: (body) => stack.submit('/transcode', body),
    status: (id) => stack.status(id),
    close: () => stack.close(),
  };
}

for (const [name, start] of [
  ['all-in-one', allInOne],
  ['Kafka (the four services as processes)', onKafka],
] as const) {
  describe(`a burst of ${BURST} jobs, ${name}`, function () {
    this.timeout(600_000);
    let files: TestServer;
    let mode: Mode;

    before(async () => {
      files = await startTestServer();
      await generateClip(join(files.dir, 'tiny.mp4'), { seconds: 0.4, width: 64, height: 64 });
      mode = await start();
    });
    after(async () => {
      await mode?.close();
      await files?.close();
    });

    it('every job reaches a terminal state, with exactly one callback each', async () => {
      const acks = await Promise.all(
        Array.from({ length: BURST }, (_, i) =>
          mode.submit({
            ...transcodeBody(files, 'tiny.mp4', `out-${i}.mp4`),
            // What is tested is the queue and the callbacks: no metrics ffmpeg after each job.
            quality: { report: false },
            successUrl: `${files.url}/callbacks/burst`,
            failureUrl: `${files.url}/callbacks/burst`,
          }),
        ),
      );
      expect(acks.filter((a) => a.status !== 200)).to.deep.equal([]);
      const ids = acks.map((a) => String(a.body['id']));
      const called = (): number =>
        new Set(files.callbacks.map((c: ReceivedCallback) => String(c.body['jobId']))).size;
      const end = Date.now() + 540_000;
      while (called() < BURST && Date.now() < end) await new Promise((r) => setTimeout(r, 250));
      // A second callback of a job would come within a few seconds of its first.
      await new Promise((r) => setTimeout(r, 3000));
      const statuses = await Promise.all(ids.map((id) => mode.status(id)));
      const verdict = judgeBurst(ids, statuses, files.callbacks);
      expect(verdict).to.deep.equal({
        terminal: BURST,
        notSucceeded: 0,
        calledBack: BURST,
        duplicates: 0,
        ok: true,
      });
    });
  });
}

describe('judgeBurst: the verdict the burst test and bench:backlog share', () => {
  const cb = (jobId: string): ReceivedCallback => ({
    path: '/callbacks/x',
    headers: {},
    body: { jobId },
    raw: '',
  });
  const done = { status: 'succeeded' };

  it('fails a job called back twice, one not called back and one not terminal', () => {
    expect(judgeBurst(['a', 'b'], [done, done], [cb('a'), cb('b')]).ok).to.equal(true);
    expect(judgeBurst(['a', 'b'], [done, done], [cb('a'), cb('b'), cb('b')])).to.include({
      duplicates: 1,
      ok: false,
    });
    expect(judgeBurst(['a', 'b'], [done, done], [cb('a'), cb('other')])).to.include({
      calledBack: 1,
      ok: false,
    });
    expect(judgeBurst(['a', 'b'], [done, { status: 'processing' }], [cb('a'), cb('b')])).to.include(
      { terminal: 1, ok: false },
    );
  });
});
