import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { DatabaseSync } from 'node:sqlite';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { Registry } from 'prom-client';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import { topics, type EventBus, type Subscription } from '../../services/core/bus/event-bus.ts';
import { createKafkaBus } from '../../services/core/bus/kafka-bus.ts';
import { loadContracts } from '../../services/core/contracts/load-contracts.ts';
import type { JobRequested } from '../../services/core/contracts/types.generated.ts';
import { MediaError } from '../../services/core/errors.ts';
import { createEventCodec, type JobEvent } from '../../services/core/events/event-codec.ts';
import { cancelRecord } from '../../services/core/status/job-cancels.ts';
import type { JobHandler } from '../../services/core/worker/job-handler.ts';
import { startJobWorker } from '../../services/core/worker/run-job-worker.ts';
import { createAddressPolicy } from '../../services/core/net/address-policy.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createMetrics } from '../../services/core/observability/metrics.ts';
import { systemClock } from '../../services/core/time.ts';
import { transcodeRequested, observeJobEvents } from '../support/job-requests.ts';
import { brokers, newPrefix, until } from '../support/kafka-test-names.ts';

const { Kafka, logLevel } = kafkajs;
const contracts = loadContracts();
const codec = createEventCodec(contracts, 'test');

/** A transcode the handler below never fetches. */
function job(): JobRequested {
  return transcodeRequested({ url: 'https://h.example.com' }, 'in.mp4', 'o.mp4', {
    callbacks: { failureUrl: 'https://hooks.example.com/fail' },
  });
}

/** Runs until canceled, like an encode: the job's signal stops it. */
const runsUntilStopped: JobHandler = (_job, ctx) =>
  new Promise((_resolve, reject) => {
    ctx.progress(10, 'encode');
    ctx.signal.addEventListener('abort', () =>
      reject(new MediaError('interrupted', 'the job was stopped')),
    );
  });

interface Setup {
  open(): EventBus;
  /** The consumer groups of this test's bus. */
  groups(): Promise<string[]>;
  cleanup(): Promise<void>;
}

async function embedded(): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'cancels-tail-'));
  const path = join(dir, 'bus.sqlite');
  return {
    open: () => createEmbeddedBus({ path }),
    groups: async () => {
      const db = new DatabaseSync(path, { readOnly: true });
      try {
        return (db.prepare('SELECT grp FROM groups ORDER BY grp').all() as { grp: string }[]).map(
          (r) => r.grp,
        );
      } finally {
        db.close();
      }
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

function kafka(): Setup {
  const prefix = newPrefix();
  return {
    open: () =>
      createKafkaBus({
        brokers: brokers(),
        topicPrefix: prefix,
        numPartitions: 3,
        logger: silentLogger,
        maxWaitTimeMs: 300,
      }),
    groups: async () => {
      const admin = new Kafka({ brokers: brokers(), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        const all = (await admin.listGroups()).groups.map((g) => g.groupId);
        return all.filter((g) => g.startsWith(prefix) || g.startsWith('job-cancels-')).sort();
      } finally {
        await admin.disconnect();
      }
    },
    cleanup: async () => undefined,
  };
}

let setup: Setup;
let bus: EventBus;
const events: JobEvent[] = [];
const workers: Subscription[] = [];
const startWorker = () =>
  startJobWorker(
    {
      bus,
      codec,
      log: silentLogger,
      metrics: createMetrics(new Registry(), { defaultMetrics: false }),
      clock: systemClock,
      sealingKeys: [],
    },
    {
      kind: 'transcode',
      group: 'transcoder',
      concurrency: 2,
      maxAttempts: 3,
      retryBackoffMs: 10,
      jobTimeoutMs: 60_000,
      progressIntervalMs: 0,
      admission: {
        addressPolicy: createAddressPolicy({ allowPrivateNetworks: false }),
        contracts,
      },
      handler: runsUntilStopped,
    },
  ).then((w) => {
    workers.push(w);
    return w;
  });
const request = (j: JobRequested) =>
  bus.publish([codec.encode(topics.transcodeRequests, 'media.job.requested', j)]);
const cancel = (j: JobRequested) =>
  bus.publish([
    cancelRecord(codec, {
      jobId: j.jobId,
      kind: 'transcode',
      orgId: j.orgId,
      requestedAt: new Date().toISOString(),
    }),
  ]);
const outcome = (j: JobRequested) =>
  events.find((e) => e.type === 'media.job.failed' && e.data.jobId === j.jobId);
const ran = (j: JobRequested) =>
  events.some((e) => e.type === 'media.job.progress' && e.data.jobId === j.jobId);
const canceledWithoutRunning = async (j: JobRequested): Promise<void> => {
  await until(() => outcome(j) !== undefined, 30_000, `the outcome of ${j.jobId}`);
  const o = outcome(j);
  expect(o?.type === 'media.job.failed' && o.data.error.code).to.equal('canceled');
  expect(ran(j), 'a job canceled before it started does not run').to.equal(false);
};

for (const kind of ['embedded', 'kafka'] as const) {
  describe(`cancels read through the bus's tail on the ${kind} bus`, function () {
    this.timeout(120_000);

    beforeEach(async () => {
      setup = kind === 'embedded' ? await embedded() : kafka();
      bus = setup.open();
      events.length = 0;
      await observeJobEvents(bus, codec, events);
    });
    afterEach(async () => {
      for (const w of workers.splice(0)) await w.close(0).catch(() => undefined);
      await bus.close();
      await setup.cleanup();
    });

    describesWorkerLearnsCancelsPublished();
  });
}

function describesWorkerLearnsCancelsPublished(): void {
  it('a worker learns the cancels published before it started and every new one; starting workers again makes no new consumer group', async () => {
    // Published before any worker runs: the job is queued and already canceled.
    const early = job();
    await cancel(early);
    await request(early);
    // Groups of earlier runs on the same broker (an old worker's job-cancels-<uuid>) are not ours.
    const before = await setup.groups();
    const first = await startWorker();
    await canceledWithoutRunning(early);
    const groups = await setup.groups();
    const made = groups.filter((g) => !before.includes(g));
    expect(made.filter((g) => g.includes('job-cancels'))).to.deep.equal([]);

    // A cancel published while the job runs stops it.
    const running = job();
    await request(running);
    await until(() => ran(running), 30_000, 'the running job');
    await cancel(running);
    await until(() => outcome(running) !== undefined, 30_000, 'the running job canceled');
    const stopped = outcome(running);
    expect(stopped?.type === 'media.job.failed' && stopped.data.error.code).to.equal('canceled');

    // Restarts, and two workers at once: the groups stay the ones the first start made.
    await first.close(0);
    workers.splice(workers.indexOf(first), 1);
    const late = job();
    await cancel(late);
    await request(late);
    await Promise.all([startWorker(), startWorker()]);
    await canceledWithoutRunning(late);
    expect(await setup.groups()).to.deep.equal(groups);
  });
}
