import { expect } from 'chai';
import {
  topics,
  type BusRecord,
  type EventBus,
  type OutgoingRecord,
} from '../../../services/core/bus/event-bus.ts';
import type { EventCodec } from '../../../services/core/events/event-codec.ts';
import type { StatusEntry } from '../../../services/core/status/job-status-fold.ts';
import {
  createJobStatusView,
  type JobStatusView,
} from '../../../services/core/status/job-status-view.ts';

// A job's request and its events are read by the status writers from different topics, so two
// ingress copies may each fold one job from part of what happened and publish the whole state.

const JOB = '0f8fad5b-d9cb-469f-a165-70867728950e';
const DIGEST = 'd'.repeat(64);

/** A status record as a writer publishes it. */
const record = (entry: Partial<StatusEntry> & { rev: number }): BusRecord => ({
  topic: topics.jobStatus,
  key: JOB,
  headers: {},
  value: Buffer.from(
    JSON.stringify({
      id: JOB,
      orgId: 'org-a',
      type: 'transcode',
      status: 'queued',
      createdAt: '2026-11-23T10:00:01.000Z',
      updatedAt: '2026-11-23T10:00:01.000Z',
      attempt: 1,
      ...entry,
    }),
  ),
});

/** What the copy that read the request wrote: the submission, at an older rev. */
const submitted = record({
  type: 'summary/gif',
  createdAt: '2026-11-23T10:00:00.000Z',
  submittedAt: '2026-11-23T10:00:00.000Z',
  queuedSince: '2026-11-23T10:00:00.000Z',
  requestDigest: DIGEST,
  rev: 1_000,
});
/** What the copy that read the job's events first wrote, later: no submission. */
const processing = record({
  status: 'processing',
  createdAt: '2026-11-23T10:00:02.000Z',
  updatedAt: '2026-11-23T10:00:02.000Z',
  rev: 2_000,
});

/** A copy's view on a bus that hands it the status records it is given and keeps what it publishes. */
async function copy(writer = true): Promise<{
  view: JobStatusView;
  read(r: BusRecord): Promise<void>;
  published: OutgoingRecord[];
}> {
  let handler: ((r: BusRecord) => Promise<void>) | undefined;
  const published: OutgoingRecord[] = [];
  const closed = { close: async () => {} };
  const bus = {
    tail: async (options: { handler: (r: BusRecord) => Promise<void> }) => {
      handler = options.handler;
      return closed;
    },
    subscribe: async () => closed,
    publish: async (records: readonly OutgoingRecord[]) => {
      published.push(...records);
    },
  } as unknown as EventBus;
  const view = createJobStatusView({ bus, codec: {} as EventCodec }, { maxJobs: 10, writer });
  await view.start();
  return {
    view,
    published,
    async read(r) {
      await handler?.(r);
      // Let the writer's publish, chained on a promise, run.
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

const entryOf = (r: OutgoingRecord): StatusEntry =>
  JSON.parse(r.value.toString('utf8')) as StatusEntry;
const entryFields = (r: BusRecord): Partial<StatusEntry> =>
  JSON.parse(r.value.toString('utf8')) as StatusEntry;

describe('job status view: two writers folding one job at once', () => {
  for (const [order, records] of [
    ['the submission first', [submitted, processing]],
    ['the newer state first', [processing, submitted]],
  ] as const)
    it(`keeps the submission a newer state folded without it lacks (${order}), and publishes the whole`, async () => {
      const c = await copy();
      for (const r of records) await c.read(r);
      expect(c.view.submission(JOB, 'org-a')).to.deep.equal({
        createdAt: '2026-11-23T10:00:00.000Z',
        status: 'processing',
        requestSeen: true,
        requestDigest: DIGEST,
      });
      expect(c.view.get(JOB, 'org-a')).to.include({ type: 'summary/gif', status: 'processing' });
      expect(c.published).to.have.length(1);
      const written = entryOf(c.published[0] as OutgoingRecord);
      expect(written).to.include({
        status: 'processing',
        submittedAt: '2026-11-23T10:00:00.000Z',
        requestDigest: DIGEST,
        createdAt: '2026-11-23T10:00:00.000Z',
      });
      expect(written.rev).to.equal(2_001);
      expect(written).to.not.have.property('queuedSince');

      // A fresh copy that reads only that record (the topic compacted) knows the submission, and
      // a copy that has it already publishes nothing more.
      const fresh = await copy();
      await fresh.read({ ...processing, value: c.published[0]?.value ?? Buffer.alloc(0) });
      expect(fresh.view.submission(JOB, 'org-a')?.requestSeen).to.equal(true);
      await c.read({ ...processing, value: c.published[0]?.value ?? Buffer.alloc(0) });
      await c.read(submitted);
      expect(c.published).to.have.length(1);
    });

  it('keeps the earlier of two submissions and a cancel from either; a copy that does not write only holds them', async () => {
    const c = await copy(false);
    await c.read(
      record({ submittedAt: '2026-11-23T10:00:00.500Z', requestDigest: 'e'.repeat(64), rev: 500 }),
    );
    await c.read(record({ cancelRequestedAt: '2026-11-23T10:00:03.000Z', rev: 900 }));
    await c.read(submitted);
    await c.read(processing);
    expect(c.view.submission(JOB, 'org-a')).to.deep.include({
      createdAt: '2026-11-23T10:00:00.000Z',
      requestDigest: DIGEST,
      requestSeen: true,
    });
    expect(c.view.get(JOB, 'org-a')).to.include({
      status: 'processing',
      cancelRequestedAt: '2026-11-23T10:00:03.000Z',
    });
    expect(c.published).to.deep.equal([]);
  });

  it('takes nothing from a record of another organisation', async () => {
    const c = await copy();
    await c.read(processing);
    await c.read(record({ ...entryFields(submitted), orgId: 'org-b', rev: 1_000 }));
    expect(c.view.submission(JOB, 'org-a')?.requestSeen).to.equal(false);
    expect(c.published).to.deep.equal([]);
  });
});

describe('job status view: two writers folding one job at once, its life', () => {
  it('keeps a later state over an earlier one written at a higher rev, and publishes it again', async () => {
    const succeeded = record({
      status: 'succeeded',
      updatedAt: '2026-11-23T10:00:09.000Z',
      rev: 3_000,
    });
    // A request record read again after a rebalance, folded by a copy that had not read the end.
    const stale = record({ ...entryFields(submitted), rev: 4_000 });
    for (const records of [
      [succeeded, stale],
      [stale, succeeded],
    ]) {
      const c = await copy();
      for (const r of records) await c.read(r);
      expect(c.view.get(JOB, 'org-a')).to.include({ status: 'succeeded', type: 'summary/gif' });
      expect(c.view.activeJobs('org-a')).to.equal(0);
      expect(c.view.submission(JOB, 'org-a')?.requestSeen).to.equal(true);
      // The copy that held the end when the stale record came writes it over; the one that read
      // the stale record first completes it with the submission, and writes that.
      expect(c.published.map((r) => entryOf(r))).to.have.length(1);
      expect(entryOf(c.published[0] as OutgoingRecord)).to.include({
        status: 'succeeded',
        submittedAt: '2026-11-23T10:00:00.000Z',
        rev: 4_001,
      });
    }
  });

  it('a progress tick folded here, at a higher rev than the end the writer recorded, does not hide that end', async () => {
    const c = await copy();
    await c.read(processing);
    c.view.apply({
      specversion: '1.0',
      id: `${JOB}:progress`,
      source: 'test',
      time: '2026-11-23T10:00:05.000Z',
      type: 'media.job.progress',
      data: { jobId: JOB, kind: 'transcode', orgId: 'org-a', attempt: 1, percent: 40 },
    } as unknown as Parameters<JobStatusView['apply']>[0]);
    expect(c.view.get(JOB, 'org-a')).to.include({ status: 'processing', progressPercent: 40 });
    await c.read(record({ status: 'succeeded', rev: 3_000 }));
    expect(c.view.get(JOB, 'org-a')).to.include({ status: 'succeeded' });
    expect(c.published).to.deep.equal([]);
  });
});
