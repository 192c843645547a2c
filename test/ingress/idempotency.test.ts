import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import {
  BusUncertainError,
  BusUnavailableError,
  topics,
  type OutgoingRecord,
} from '../../services/core/bus/event-bus.ts';
import { codec, decodeAll, recordingBus } from '../notifier/notifier-fixture.ts';
import { KEY_A, KEY_B, makeIngress, validSummary, validTranscode } from './ingress-fixture.ts';

const requests = (published: readonly OutgoingRecord[]) =>
  published.filter(
    (r) => r.topic === topics.transcodeRequests || r.topic === topics.summaryRequests,
  );

describe('Idempotency-Key on submissions, through the HTTP app', () => {
  describesSameKeyAndBodyAnswerFirst();

  describesAnotherOrganisationsKey();

  describesEmptyIdempotencyKeyBlanks();

  describesHoldsAcrossRestartNew();

  describesTwoCopiesBothPublish();

  describesPublishBusCannotConfirm();
});

function describesSameKeyAndBodyAnswerFirst(): void {
  it('the same key and body answer the first acknowledgement (same id and createdAt); one record is queued', async () => {
    const bus = recordingBus();
    const ingress = await makeIngress({ bus });
    const first = await request(ingress.server)
      .post('/transcode')
      .set('Idempotency-Key', 'order-1')
      .send(validTranscode);
    expect(first.status).to.equal(200);
    // The same body with its fields in another order is the same request.
    const reordered = Object.fromEntries(Object.entries(validTranscode).reverse());
    const again = await request(ingress.server)
      .post('/transcode')
      .set('Idempotency-Key', 'order-1')
      .send(reordered);
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal(first.body);
    expect(requests(bus.published)).to.have.length(1);
    const [job] = decodeAll(requests(bus.published));
    expect(job?.type === 'media.job.requested' && job.data.requestDigest).to.match(
      /^[0-9a-f]{64}$/,
    );
  });

  it('the same key with another body, or on another path, is 409 with {error}; nothing more is queued', async () => {
    const bus = recordingBus();
    const ingress = await makeIngress({ bus });
    const key = 'order-2';
    expect(
      (
        await request(ingress.server)
          .post('/transcode')
          .set('Idempotency-Key', key)
          .send(validTranscode)
      ).status,
    ).to.equal(200);
    const changed = await request(ingress.server)
      .post('/transcode')
      .set('Idempotency-Key', key)
      .send({ ...validTranscode, bitrateKbps: '2000' });
    expect(changed.status).to.equal(409);
    expect(Object.keys(changed.body)).to.deep.equal(['error']);
    expect(changed.body.error).to.match(/Idempotency-Key/);
    const otherPath = await request(ingress.server)
      .post('/summary/gif')
      .set('Idempotency-Key', key)
      .send(validSummary);
    expect(otherPath.status).to.equal(409);
    expect(requests(bus.published)).to.have.length(1);
  });
}

function describesAnotherOrganisationsKey(): void {
  it("another organisation's identical key is a job of its own", async () => {
    const bus = recordingBus();
    const ingress = await makeIngress({ bus });
    const a = await request(ingress.server)
      .post('/transcode')
      .set('Idempotency-Key', 'shared-key')
      .send(validTranscode);
    const b = await request(ingress.server)
      .post('/transcode')
      .set('Idempotency-Key', 'shared-key')
      .send({ ...validTranscode, apiKey: KEY_B, bitrateKbps: '4000' });
    expect(a.status).to.equal(200);
    expect(b.status).to.equal(200);
    expect(b.body.id).to.not.equal(a.body.id);
    expect(
      (await request(ingress.server).get(`/jobs/${a.body.id}`).set('x-api-key', KEY_B)).status,
    ).to.equal(404);
    expect(requests(bus.published)).to.have.length(2);
  });

  it('requests with one key at once on one copy queue one job and all get its acknowledgement', async () => {
    const bus = recordingBus();
    const ingress = await makeIngress({ bus });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        request(ingress.server)
          .post('/transcode')
          .set('Idempotency-Key', 'burst')
          .send(validTranscode),
      ),
    );
    expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).to.equal(1);
    expect(requests(bus.published)).to.have.length(1);
  });

  it('without the header every submission is a new job; a malformed header is 400', async () => {
    const bus = recordingBus();
    const ingress = await makeIngress({ bus });
    const one = await request(ingress.server).post('/transcode').send(validTranscode);
    const two = await request(ingress.server).post('/transcode').send(validTranscode);
    expect(one.body.id).to.not.equal(two.body.id);
    const bad = await request(ingress.server)
      .post('/transcode')
      .set('Idempotency-Key', 'x'.repeat(256))
      .send(validTranscode);
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/Idempotency-Key/);
  });
}

function describesEmptyIdempotencyKeyBlanks(): void {
  it('an empty Idempotency-Key, or one of blanks, is a 400 and queues nothing', async () => {
    const bus = recordingBus();
    const ingress = await makeIngress({ bus });
    for (const key of ['', '   ', 'x'.repeat(256)]) {
      const res = await request(ingress.server)
        .post('/transcode')
        .set('Idempotency-Key', key)
        .send(validTranscode);
      expect(res.status, JSON.stringify(key)).to.equal(400);
      expect(res.body.error).to.equal(
        'the Idempotency-Key header must be 1 to 255 visible ASCII characters',
      );
    }
    expect(requests(bus.published)).to.deep.equal([]);
  });

  it('a key is kept 24 h: after that the same key makes a new job', async () => {
    let now = Date.parse('2026-05-01T10:00:00.000Z');
    const bus = recordingBus();
    const ingress = await makeIngress({ bus, clock: { now: () => new Date(now) } });
    const send = () =>
      request(ingress.server)
        .post('/transcode')
        .set('Idempotency-Key', 'daily')
        .send(validTranscode);
    const first = await send();
    now += 23 * 3600_000;
    expect((await send()).body).to.deep.equal(first.body);
    now += 2 * 3600_000;
    const later = await send();
    expect(later.status).to.equal(200);
    expect(later.body.id).to.not.equal(first.body.id);
    now += 3600_000;
    expect((await send()).body).to.deep.equal(later.body);
    expect(requests(bus.published)).to.have.length(2);
  });
}

function describesHoldsAcrossRestartNew(): void {
  it('holds across a restart: a new ingress on the same bus file answers the first acknowledgement', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'idempotency-restart-'));
    try {
      const path = join(dir, 'bus.sqlite');
      const firstBus = createEmbeddedBus({ path });
      const before = await makeIngress({ bus: firstBus });
      await before.statusView.start();
      const first = await request(before.server)
        .post('/transcode')
        .set('Idempotency-Key', 'survives')
        .send(validTranscode);
      expect(first.status).to.equal(200);
      await before.statusView.close();
      await firstBus.close();

      const secondBus = createEmbeddedBus({ path });
      const after = await makeIngress({ bus: secondBus });
      await after.statusView.start();
      try {
        // The view reads the bus from the beginning; wait until it holds the job.
        for (let i = 0; i < 100 && !after.statusView.get(first.body.id, 'org-a'); i++)
          await new Promise((r) => setTimeout(r, 20));
        const again = await request(after.server)
          .post('/transcode')
          .set('Idempotency-Key', 'survives')
          .send(validTranscode);
        expect(again.status).to.equal(200);
        expect(again.body).to.deep.equal(first.body);
        const conflict = await request(after.server)
          .post('/transcode')
          .set('Idempotency-Key', 'survives')
          .send({ ...validTranscode, width: 640 });
        expect(conflict.status).to.equal(409);
      } finally {
        await after.statusView.close();
        await secondBus.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
}

function describesTwoCopiesBothPublish(): void {
  it('two copies that both publish (a race) give the same id; the view keeps the earliest createdAt', async () => {
    const bus = recordingBus();
    const copyA = await makeIngress({ bus });
    const copyB = await makeIngress({ bus });
    const a = await request(copyA.server)
      .post('/transcode')
      .set('Idempotency-Key', 'race')
      .send(validTranscode);
    const b = await request(copyB.server)
      .post('/transcode')
      .set('Idempotency-Key', 'race')
      .send(validTranscode);
    expect(b.body.id).to.equal(a.body.id);
    // B never saw A's record: both were published, with different event ids.
    const records = decodeAll(requests(bus.published));
    expect(records).to.have.length(2);
    expect(records[0]?.id).to.not.equal(records[1]?.id);
    // Once B's view reads A's record, GET and further repeats show the first createdAt.
    for (const event of records) copyB.statusView.apply(event);
    const status = await request(copyB.server).get(`/jobs/${a.body.id}`).set('x-api-key', KEY_A);
    expect(status.body.createdAt).to.equal(a.body.createdAt);
    const repeat = await request(copyB.server)
      .post('/transcode')
      .set('Idempotency-Key', 'race')
      .send(validTranscode);
    expect(repeat.body).to.deep.equal(a.body);
  });

  it("a copy that has read the job's events but not its request answers 409 in progress, then the first acknowledgement", async () => {
    const bus = recordingBus();
    const copyA = await makeIngress({ bus });
    const copyB = await makeIngress({ bus: recordingBus() });
    const send = (copy: typeof copyA) =>
      request(copy.server).post('/transcode').set('Idempotency-Key', 'early').send(validTranscode);
    const first = await send(copyA);
    const processing = codec.decode(
      codec.encode(topics.jobEvents, 'media.job.processing', {
        jobId: first.body.id,
        kind: 'transcode',
        orgId: 'org-a',
        attempt: 1,
        startedAt: new Date().toISOString(),
      }),
    );
    if (!processing.ok) throw new Error(processing.reason);
    copyB.statusView.apply(processing.event);
    const early = await send(copyB);
    expect(early.status).to.equal(409);
    expect(early.body.error).to.match(/still being recorded/);
    for (const event of decodeAll(requests(bus.published))) copyB.statusView.apply(event);
    const later = await send(copyB);
    expect(later.status).to.equal(200);
    expect(later.body).to.deep.equal(first.body);
  });
}

function describesPublishBusCannotConfirm(): void {
  it('a publish the bus cannot confirm is 503 bus_uncertain with the job id; a retry with the key is that job', async () => {
    const bus = recordingBus();
    // The first record reaches the brokers but its acknowledgement does not come in time.
    let answers = [new BusUncertainError('publish: timed out; the records may be written')];
    bus.publish = async (records) => {
      bus.published.push(...records);
      const error = answers.shift();
      if (error) throw error;
    };
    const ingress = await makeIngress({ bus });
    const send = () =>
      request(ingress.server)
        .post('/transcode')
        .set('Idempotency-Key', 'order-uncertain')
        .send(validTranscode);
    const first = await send();
    expect(first.status).to.equal(503);
    expect(first.body.error).to.match(/may have been queued/);
    expect(first.body.jobId).to.match(/^[0-9a-f-]{36}$/);
    const retry = await send();
    expect(retry.status).to.equal(200);
    expect(retry.body.id).to.equal(first.body.jobId);
    const jobIds = decodeAll(requests(bus.published)).map((e) =>
      e.type === 'media.job.requested' ? e.data.jobId : undefined,
    );
    expect(jobIds).to.deep.equal([first.body.jobId, first.body.jobId]);

    // A publish that sent nothing stays a plain 503 bus_unavailable, without a job id.
    answers = [new BusUnavailableError('connect: refused')];
    const refused = await request(ingress.server).post('/transcode').send(validTranscode);
    expect(refused.status).to.equal(503);
    expect(Object.keys(refused.body)).to.deep.equal(['error']);
    expect(refused.body.error).to.match(/nothing was queued/);
  });
}
