import { expect } from 'chai';
import { longClip, SHORT_CLIP } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';
import { fileCallbacks, transcodeBody } from '../support/job-requests.ts';
import {
  eventually,
  requireEnv,
  STACK_KEY,
  startStackWithClips,
  type KafkaStack,
} from '../support/kafka-stack.ts';
import { freePort, spawnService, type SpawnedService } from '../support/spawn-service.ts';

const OTHER_KEY = 'kafka-other-org-key-0123456789';
const ingressMain = new URL('../../services/ingress/main.ts', import.meta.url).pathname;

let files: TestServer;
let stack: KafkaStack;
const extra: SpawnedService[] = [];
const job = (name: string, input = 'short.mp4'): Record<string, unknown> =>
  transcodeBody(files, input, name, { apiKey: STACK_KEY, ...fileCallbacks(files) });
const submit = async (base: string, body: Record<string, unknown>, key?: string) => {
  const res = await fetch(`${base}/transcode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
/** A repeat, tried again while the copy has not read the first request yet (409 in progress). */
const repeat = async (base: string, body: Record<string, unknown>, key: string) => {
  let last = await submit(base, body, key);
  await eventually(
    async () => {
      if (!/still being recorded/.test(String(last.body['error']))) return true;
      last = await submit(base, body, key);
      return false;
    },
    30_000,
    'the copy to read the first request',
  );
  return last;
};
const known = async (base: string, id: string) =>
  (await fetch(`${base}/jobs/${id}`, { headers: { 'x-api-key': STACK_KEY } })).status === 200;
const url = (i: number) => stack.ingresses[i]?.url ?? '';
const startedOn = (id: string) =>
  stack.workers.transcoder.flatMap((w) =>
    w.logs.filter((r) => r['msg'] === 'job.started' && r['jobId'] === id).map(() => w),
  );

describe('Kafka: idempotent submissions across ingress copies and a restart; cancel reaching a worker process', function () {
  this.timeout(300_000);

  before(async () => {
    requireEnv('TEST_KAFKA_BROKERS');
    ({ files, stack } = await startStackWithClips(
      { 'short.mp4': SHORT_CLIP, 'long.mp4': longClip(20) },
      {
        ingresses: 2,
        transcoders: 2,
        notifiers: 1,
        extraEnv: { API_KEYS: `${STACK_KEY}:org-k,${OTHER_KEY}:org-x` },
      },
    ));
  });
  after(async () => {
    await Promise.all(extra.map((p) => p.stop(8000)));
    await stack?.close();
    await files?.close();
  });

  describesRepeatOtherCopyAnswers();

  describesHoldsAcrossRestartNew();
});

function describesRepeatOtherCopyAnswers(): void {
  it('a repeat at the other copy answers the first acknowledgement; another body is 409; another organisation is independent', async () => {
    const body = job('seq.mp4');
    const first = await submit(url(0), body, 'seq-key');
    expect(first.status).to.equal(200);
    await eventually(
      () => known(url(1), String(first.body['id'])),
      30_000,
      'copy 1 to see the job',
    );
    const again = await repeat(url(1), body, 'seq-key');
    expect(again).to.deep.equal(first);
    const conflict = await submit(url(1), { ...body, bitrateKbps: '2000' }, 'seq-key');
    expect(conflict.status).to.equal(409);
    expect(Object.keys(conflict.body)).to.deep.equal(['error']);
    const other = await submit(url(1), { ...body, apiKey: OTHER_KEY }, 'seq-key');
    expect(other.status).to.equal(200);
    expect(other.body['id']).to.not.equal(first.body['id']);
    const id = String(first.body['id']);
    await files.waitForCallback((c) => c.body['jobId'] === id, 120_000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(files.callbacks.filter((c) => c.body['jobId'] === id)).to.have.length(1);
    expect(startedOn(id)).to.have.length(1);
  });

  it('the same key at both copies at once: one id, the job runs once, one callback', async () => {
    const body = job('race.mp4');
    const [a, b] = await Promise.all([
      submit(url(0), body, 'race-key'),
      submit(url(1), body, 'race-key'),
    ]);
    expect(a.status).to.equal(200);
    expect(b.status).to.equal(200);
    expect(b.body['id']).to.equal(a.body['id']);
    const id = String(a.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 120_000);
    expect(callback.body['status']).to.equal('succeeded');
    await new Promise((r) => setTimeout(r, 2000));
    expect(files.callbacks.filter((c) => c.body['jobId'] === id)).to.have.length(1);
    expect(startedOn(id), 'job.started logs').to.have.length(1);
    // When both copies published (neither had seen the other's record), the worker skipped one.
    const published = stack.ingresses.filter((i) =>
      i.process.logs.some((r) => r['msg'] === 'job.queued' && r['jobId'] === id),
    ).length;
    const skipped = stack.workers.transcoder.flatMap((w) =>
      // Skipped as a duplicate while the first ran, or as an attempt that had ended by then.
      w.logs.filter(
        (r) =>
          (r['msg'] === 'job.duplicate_request' || r['msg'] === 'job.outcome_exists') &&
          r['jobId'] === id,
      ),
    ).length;
    expect(skipped, `${published} request records published`).to.equal(published - 1);
    // GET at either copy shows the earliest createdAt of the two.
    const createdAt = [a.body['createdAt'], b.body['createdAt']].map(String).sort()[0];
    for (const i of [0, 1]) expect((await stack.status(id, i))['createdAt']).to.equal(createdAt);
  });
}

function describesHoldsAcrossRestartNew(): void {
  it('holds across a restart: a new ingress process answers the first acknowledgement', async () => {
    const body = job('restart.mp4');
    const first = await submit(url(0), body, 'restart-key');
    expect(first.status).to.equal(200);
    const port = await freePort();
    const fresh = spawnService(ingressMain, { ...stack.env, PORT: String(port) });
    extra.push(fresh);
    await fresh.waitForLog((r) => r['msg'] === 'ingress.listening', 60_000);
    const base = `http://127.0.0.1:${port}`;
    await eventually(
      () => known(base, String(first.body['id'])),
      30_000,
      'the new copy to read the job',
    );
    expect(await repeat(base, body, 'restart-key')).to.deep.equal(first);
  });

  it('a cancel sent to one ingress copy stops ffmpeg in the transcoder process running the job', async () => {
    const ack = await submit(url(0), { ...job('cancel.mp4', 'long.mp4'), width: 1280 });
    const id = String(ack.body['id']);
    await eventually(
      async () => Number((await stack.status(id, 1))['progressPercent'] ?? 0) > 3,
      90_000,
      'the encode to make progress',
    );
    const [owner] = startedOn(id);
    expect(owner, 'a transcoder logged job.started').to.not.equal(undefined);
    const sent = performance.now();
    const res = await fetch(`${url(1)}/jobs/${id}/cancel`, {
      method: 'POST',
      headers: { 'x-api-key': STACK_KEY },
    });
    expect(res.status).to.equal(202);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 60_000);
    const tookMs = performance.now() - sent;
    expect(callback.path).to.equal('/callbacks/fail');
    expect(callback.body['code']).to.equal('canceled');
    expect(tookMs, 'canceled within seconds, not at the end of the encode').to.be.below(20_000);
    expect(
      owner?.logs.some((r) => r['msg'] === 'job.cancel_received' && r['jobId'] === id),
    ).to.equal(true);
    for (const i of [0, 1])
      await eventually(
        async () => (await stack.status(id, i))['status'] === 'canceled',
        20_000,
        `copy ${i} to show canceled`,
      );
    // Ended once, and not retried elsewhere.
    await new Promise((r) => setTimeout(r, 2000));
    expect(files.callbacks.filter((c) => c.body['jobId'] === id)).to.have.length(1);
    expect(startedOn(id)).to.have.length(1);
    const late = await fetch(`${url(0)}/jobs/${id}/cancel`, {
      method: 'POST',
      headers: { 'x-api-key': STACK_KEY },
    });
    expect(late.status).to.equal(409);
  });
}
