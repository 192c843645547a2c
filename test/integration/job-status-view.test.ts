import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import request from 'supertest';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import { topics, type EventBus, type OutgoingRecord } from '../../services/core/bus/event-bus.ts';
import { createKafkaBus } from '../../services/core/bus/kafka-bus.ts';
import type { EventDataOf } from '../../services/core/events/event-codec.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createEventCodec } from '../../services/core/events/event-codec.ts';
import {
  KEY_A,
  KEY_B,
  contracts,
  makeIngress,
  validTranscode,
} from '../ingress/ingress-fixture.ts';
import { newPrefix, until } from '../support/kafka-test-names.ts';

const { Kafka, logLevel } = kafkajs;
const codec = createEventCodec(contracts, 'test');

const result = {
  outputUrl: 'https://media.example.com/out.mp4',
  format: 'mp4',
  width: 320,
  height: 240,
  durationSeconds: 2,
  sizeBytes: 1000,
  videoCodec: 'h264',
};

/** The bus, counting the status records written through it. */
function counting(bus: EventBus): EventBus & { statusWrites: OutgoingRecord[] } {
  const statusWrites: OutgoingRecord[] = [];
  return {
    ...bus,
    statusWrites,
    publish: async (records) => {
      await bus.publish(records);
      statusWrites.push(...records.filter((r) => r.topic === topics.jobStatus));
    },
  };
}

interface BusMaker {
  /** A bus on the same store as every other one this maker made (a restart opens another). */
  open(): EventBus;
  /** Consumer groups on the broker now (Kafka only). */
  groups?(): Promise<string[]>;
  cleanup(): Promise<void>;
}

let maker: BusMaker;
const closers: Array<() => Promise<void>> = [];
/** An ingress whose view is started, as startIngress does it. */
const ingress = async (maxJobs = 100) => {
  const bus = counting(maker.open());
  const made = await makeIngress({ bus, maxJobs });
  await made.statusView.start();
  closers.push(async () => {
    await made.statusView.close();
    await bus.close();
  });
  return { ...made, bus };
};
const publish = async <T extends keyof EventDataOf>(
  bus: EventBus,
  type: T,
  data: EventDataOf[T],
): Promise<void> => bus.publish([codec.encode(topics.jobEvents, type, data)]);
const getJob = (server: Parameters<typeof request>[0], id: string, key = KEY_A) =>
  request(server).get(`/jobs/${id}`).set('x-api-key', key);

for (const kind of ['embedded', 'kafka'] as const) {
  describe(`job status view over HTTP on the ${kind} bus`, function () {
    this.timeout(120_000);

    beforeEach(async () => {
      maker = kind === 'embedded' ? await embeddedMaker() : kafkaMaker();
    });
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
      await maker.cleanup();
    });

    describesFollowsJobDeliveredCallback();

    describesBringsBackCancelIdempotency();

    describesRestartLoadsOnlyAbout(kind);
  });
}

function describesFollowsJobDeliveredCallback(): void {
  it('follows a job to its delivered callback, writes each state change once and no progress tick, and finds it all again after a restart', async () => {
    const first = await ingress();
    const ack = await request(first.server)
      .post('/transcode')
      .send({ ...validTranscode, successUrl: 'https://hooks.example.com/ok' });
    expect(ack.status).to.equal(200);
    const id = String(ack.body.id);
    const job = { jobId: id, kind: 'transcode' as const, orgId: 'org-a', attempt: 1 };
    expect((await getJob(first.server, id)).body.status).to.equal('queued');
    await until(() => first.bus.statusWrites.length === 1, 20_000, 'the queued state written');

    await publish(first.bus, 'media.job.processing', {
      ...job,
      startedAt: new Date().toISOString(),
    });
    for (const percent of [10, 20, 30, 40, 50])
      await publish(first.bus, 'media.job.progress', { ...job, percent, stage: 'encode' });
    await until(
      () => first.statusView.get(id, 'org-a')?.progressPercent === 50,
      20_000,
      'progress seen',
    );
    const webhookId = `${id}:media.job.succeeded:1`;
    await publish(first.bus, 'media.job.succeeded', {
      ...job,
      finishedAt: '2026-03-01T12:00:00.000Z',
      callbacks: { successUrl: 'https://hooks.example.com/ok' },
      result: result as never,
    });
    await publish(first.bus, 'media.callback.status', {
      jobId: id,
      orgId: 'org-a',
      webhookId,
      state: 'delivered',
      attempts: 2,
      lastStatus: 200,
      at: new Date().toISOString(),
    });
    await until(
      () => first.statusView.get(id, 'org-a')?.callback?.state === 'delivered',
      20_000,
      'callback delivered in the view',
    );
    await until(() => first.bus.statusWrites.length >= 4, 20_000, 'four state changes');
    const before = (await getJob(first.server, id)).body as Record<string, unknown>;
    expect(before).to.include({ id, status: 'succeeded', progressPercent: 100, attempt: 1 });
    expect(before['callback']).to.deep.equal({
      state: 'delivered',
      webhookId,
      attempts: 2,
      lastStatus: 200,
    });
    // queued, processing, succeeded, callback delivered: no record for the five progress ticks.
    expect(first.bus.statusWrites.map((r) => r.key)).to.deep.equal([id, id, id, id]);
    const groupsBefore = await maker.groups?.();

    for (const close of closers.splice(0).reverse()) await close();
    const second = await ingress();
    expect((await getJob(second.server, id)).body).to.deep.equal(before);
    expect((await getJob(second.server, id, KEY_B)).status).to.equal(404);
    expect((await getJob(second.server, randomUUID())).status).to.equal(404);
    const redelivery = await request(second.server)
      .post(`/jobs/${id}/callbacks/redeliver`)
      .set('x-api-key', KEY_A);
    expect(redelivery.status).to.equal(202);
    expect(redelivery.body).to.deep.equal({ id, webhookId, state: 'pending' });
    expect(second.bus.statusWrites).to.have.length(0);

    if (maker.groups) {
      for (const close of closers.splice(0).reverse()) await close();
      await ingress();
      const groupsAfter = await maker.groups();
      expect(groupsAfter.filter((g) => !groupsBefore?.includes(g))).to.deep.equal([]);
    }
  });
}

function describesBringsBackCancelIdempotency(): void {
  it('brings back a cancel, an Idempotency-Key and the active-job counts from the status topic after a restart', async () => {
    const first = await ingress();
    const submit = (key?: string, body: object = validTranscode) => {
      const req = request(first.server).post('/transcode');
      return (key === undefined ? req : req.set('Idempotency-Key', key)).send(body);
    };
    const keyed = await submit('order-1');
    const canceled = await submit();
    const running = await submit();
    for (const res of [keyed, canceled, running]) expect(res.status).to.equal(200);
    const [a, b, c] = [keyed, canceled, running].map((res) => String(res.body.id));
    const cancel = await request(first.server).post(`/jobs/${b}/cancel`).set('x-api-key', KEY_A);
    expect(cancel.status).to.equal(202);
    await publishProcessingAndCanceled(first.bus, c ?? '', b ?? '');
    await until(
      () =>
        first.statusView.get(b ?? '', 'org-a')?.status === 'canceled' &&
        first.statusView.get(c ?? '', 'org-a')?.status === 'processing',
      20_000,
      'canceled and processing in the view',
    );
    // The newest record of each job written holds its whole state (a writer that has read
    // the cancel and the failure before publishing may write both in one record).
    const written = (id: string | undefined) => {
      const last = first.bus.statusWrites.filter((r) => r.key === id).at(-1);
      return last ? (JSON.parse(last.value.toString('utf8')) as Record<string, unknown>) : {};
    };
    await until(
      () =>
        written(a)['status'] === 'queued' &&
        written(a)['requestDigest'] !== undefined &&
        written(b)['status'] === 'canceled' &&
        written(b)['cancelRequestedAt'] !== undefined &&
        written(c)['status'] === 'processing',
      20_000,
      'the three jobs written as they are',
    );
    const countsBefore = activeCounts(first.statusView);
    expect(countsBefore).to.deep.equal({
      active: 2,
      otherOrg: 0,
      waiting: ['org-a/transcode=1'],
    });
    const canceledBefore = (await getJob(first.server, b ?? '')).body as Record<string, unknown>;
    expect(canceledBefore).to.include({ status: 'canceled' });
    expect(canceledBefore['cancelRequestedAt']).to.be.a('string');
    const keyedBefore = (await getJob(first.server, a ?? '')).body as Record<string, unknown>;
    expect(keyedBefore['queuedSince']).to.be.a('string');
    expect(keyedBefore).to.not.have.any.keys('submittedAt', 'requestDigest', 'rev', 'orgId');

    for (const close of closers.splice(0).reverse()) await close();
    const second = await ingress();
    expect(activeCounts(second.statusView)).to.deep.equal(countsBefore);
    expect((await getJob(second.server, b ?? '')).body).to.deep.equal(canceledBefore);
    expect((await getJob(second.server, a ?? '')).body).to.deep.equal(keyedBefore);
    expect(second.statusView.submission(a ?? '', 'org-a')).to.include({
      requestSeen: true,
      createdAt: keyed.body.createdAt,
    });
    const repeat = await request(second.server)
      .post('/transcode')
      .set('Idempotency-Key', 'order-1')
      .send(validTranscode);
    expect(repeat.status).to.equal(200);
    expect(repeat.body).to.deep.equal(keyed.body);
    const changed = await request(second.server)
      .post('/transcode')
      .set('Idempotency-Key', 'order-1')
      .send({ ...validTranscode, bitrateKbps: '2000' });
    expect(changed.status).to.equal(409);
  });
}

/** What a worker would publish: one job starts processing, another fails as canceled. */
async function publishProcessingAndCanceled(
  bus: EventBus,
  processing: string,
  canceled: string,
): Promise<void> {
  await publish(bus, 'media.job.processing', {
    jobId: processing,
    kind: 'transcode',
    orgId: 'org-a',
    attempt: 1,
    startedAt: new Date().toISOString(),
  });
  await publish(bus, 'media.job.failed', {
    jobId: canceled,
    kind: 'transcode',
    orgId: 'org-a',
    attempt: 1,
    finishedAt: new Date().toISOString(),
    error: { code: 'canceled', message: 'canceled by its organisation', retryable: false },
  } as never);
}

/** The active-job counts a restart must bring back. */
function activeCounts(view: Awaited<ReturnType<typeof ingress>>['statusView']) {
  return {
    active: view.activeJobs('org-a'),
    otherOrg: view.activeJobs('org-b'),
    waiting: [...view.waiting().values()].map((w) => `${w.orgId}/${w.kind}=${w.count}`),
  };
}

function describesRestartLoadsOnlyAbout(kind: 'embedded' | 'kafka'): void {
  it('a restart loads only about maxJobs of the newest jobs, however many the history holds', async () => {
    const first = await ingress(1000);
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) {
      const jobId = randomUUID();
      ids.push(jobId);
      await first.bus.publish([
        codec.encode(topics.transcodeRequests, 'media.job.requested', {
          jobId,
          orgId: 'org-a',
          kind: 'transcode',
          attempt: 1,
          submittedAt: new Date().toISOString(),
          input: { url: 'https://media.example.com/in.mp4' },
          output: { url: 'https://media.example.com/out.mp4' },
          transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
        }),
      ]);
    }
    await until(() => first.bus.statusWrites.length === 300, 60_000, '300 queued states written');
    for (const close of closers.splice(0).reverse()) await close();

    const second = await ingress(60);
    const found = ids.filter((id) => second.statusView.get(id, 'org-a') !== undefined);
    expect(found.length).to.be.at.most(60);
    // Kafka shares the tail among the partitions: the newest job of each one is in.
    expect(found.length).to.be.at.least(kind === 'kafka' ? 10 : 60);
    expect(second.statusView.get(ids[0] ?? '', 'org-a')).to.equal(undefined);
    expect((await getJob(second.server, ids[0] ?? '')).status).to.equal(404);
    const newest = found[found.length - 1] ?? '';
    expect((await getJob(second.server, newest)).body.status).to.equal('queued');
  });
}

async function embeddedMaker(): Promise<BusMaker> {
  const dir = await mkdtemp(join(tmpdir(), 'status-view-'));
  return {
    open: () => createEmbeddedBus({ path: join(dir, 'bus.sqlite') }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

function kafkaMaker(): BusMaker {
  const brokers = (process.env['TEST_KAFKA_BROKERS'] ?? '').split(',');
  if (!brokers[0]) throw new Error('TEST_KAFKA_BROKERS is not set');
  const prefix = newPrefix();
  return {
    open: () =>
      createKafkaBus({
        brokers,
        topicPrefix: prefix,
        numPartitions: 3,
        logger: silentLogger,
        maxWaitTimeMs: 300,
      }),
    groups: async () => {
      const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        return (await admin.listGroups()).groups.map((g) => g.groupId);
      } finally {
        await admin.disconnect();
      }
    },
    cleanup: async () => undefined,
  };
}
