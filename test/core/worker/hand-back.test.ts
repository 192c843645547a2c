import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import {
  topics,
  type EventBus,
  type OutgoingRecord,
  type RecordHandler,
} from '../../../services/core/bus/event-bus.ts';
import { isHandBack } from '../../../services/core/bus/hand-back.ts';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import { createEventCodec } from '../../../services/core/events/event-codec.ts';
import { createAddressPolicy } from '../../../services/core/net/address-policy.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';
import { createMetrics } from '../../../services/core/observability/metrics.ts';
import { systemClock } from '../../../services/core/time.ts';
import type { JobHandler } from '../../../services/core/worker/job-handler.ts';
import { startJobWorker } from '../../../services/core/worker/run-job-worker.ts';
import { transcodeRequested } from '../../support/job-requests.ts';

const contracts = loadContracts();
const codec = createEventCodec(contracts, 'test');

const job = transcodeRequested({ url: 'https://h.example.com' }, 'in.mp4', 'o.mp4');

/**
 * A worker on an embedded bus whose request subscription is kept here, so a test hands the
 * worker's record handler a delivery of its own; `published` lists the types of what it
 * publishes.
 */
async function worker(handler: JobHandler, begin: () => Promise<void> = () => Promise.resolve()) {
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const bus = createEmbeddedBus({ path: ':memory:', redeliveryDelayMs: 10 });
  const published: string[] = [];
  let handle: RecordHandler | undefined;
  const watched: EventBus = {
    publish: (records: readonly OutgoingRecord[]) => {
      for (const r of records) {
        const decoded = codec.decode({ ...r, headers: r.headers ?? {} });
        published.push(decoded.ok ? decoded.event.type : 'undecodable');
      }
      return bus.publish(records);
    },
    subscribe: async (options) => {
      if (options.group !== 'w') return bus.subscribe(options);
      handle = options.handler;
      return { close: async () => {} };
    },
    tail: (options) => bus.tail(options),
    isReady: () => bus.isReady(),
    close: () => bus.close(),
  };
  const subscription = await startJobWorker(
    {
      bus: watched,
      codec,
      log: silentLogger,
      metrics,
      clock: systemClock,
      sealingKeys: [{ id: 'k', key: Buffer.alloc(32, 3) }],
    },
    {
      kind: 'transcode',
      group: 'w',
      concurrency: 1,
      maxAttempts: 3,
      retryBackoffMs: 10,
      jobTimeoutMs: 2000,
      admission: {
        addressPolicy: createAddressPolicy({ allowPrivateNetworks: false }),
        contracts,
      },
      handler,
    },
  );
  if (!handle) throw new Error('the worker did not subscribe');
  const record = {
    ...codec.encode(topics.transcodeRequests, 'media.job.requested', job),
    headers: {},
  };
  const recordHandler = handle;
  const deliver = (signal: AbortSignal) =>
    recordHandler(record, {
      signal,
      heartbeat: async () => {},
      waitOnly: () => {},
      begin,
    });
  const close = async (): Promise<void> => {
    await subscription.close();
    await bus.close();
  };
  const moved = async (): Promise<number> =>
    (await metrics.jobsMoved.get()).values.find((v) => v.labels.kind === 'transcode')?.value ?? 0;
  return { deliver, published, moved, close };
}

describe('job worker: handing a record back', () => {
  describesRecordLostJobRuns();

  describesJobRecordMovesBegin();
});

function describesRecordLostJobRuns(): void {
  it('a record lost while its job runs is handed back as a HandBack, with no outcome published', async () => {
    const lost = new AbortController();
    const w = await worker(
      (_job, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
          setTimeout(() => lost.abort(), 20);
        }),
    );
    const rejection: unknown = await w.deliver(lost.signal).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isHandBack(rejection), String(rejection)).to.equal(true);
    expect(w.published).to.deep.equal(['media.job.processing']);
    await w.close();
  });

  it('a record lost before its job starts is handed back without running it', async () => {
    let ran = false;
    const w = await worker(async () => {
      ran = true;
      throw new Error('not to run');
    });
    const rejection: unknown = await w.deliver(AbortSignal.abort()).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isHandBack(rejection), String(rejection)).to.equal(true);
    expect(ran).to.equal(false);
    expect(w.published).to.deep.equal([]);
    await w.close();
  });

  it('a job lost while it only waits moves: handed back, counted in jobs_moved_total', async () => {
    const lost = new AbortController();
    const w = await worker(
      (_job, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.waiting();
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
          setTimeout(() => lost.abort(), 20);
        }),
    );
    const rejection: unknown = await w.deliver(lost.signal).catch((error: unknown) => error);
    expect(isHandBack(rejection), String(rejection)).to.equal(true);
    expect(await w.moved()).to.equal(1);
    await w.close();
  });
}

function describesJobRecordMovesBegin(): void {
  it('a job whose record moves while its begin waits for the assignment never begins: it moves', async () => {
    const lost = new AbortController();
    let worked = false;
    // The bus answers begin() once the assignment is known: by then the record has moved.
    const w = await worker(
      async (_job, ctx) => {
        ctx.waiting();
        await ctx.begin();
        worked = true;
        return Promise.reject(new Error('not to work'));
      },
      async () => {
        lost.abort();
        await Promise.resolve();
      },
    );
    const rejection: unknown = await w.deliver(lost.signal).catch((error: unknown) => error);
    expect(isHandBack(rejection), String(rejection)).to.equal(true);
    expect(worked).to.equal(false);
    expect(await w.moved()).to.equal(1);
    await w.close();
  });

  it('a job lost once its work has begun is handed back, not counted as moved', async () => {
    const lost = new AbortController();
    const w = await worker(async (_job, ctx) => {
      ctx.waiting();
      await ctx.begin();
      return new Promise((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error));
        setTimeout(() => lost.abort(), 20);
      });
    });
    const rejection: unknown = await w.deliver(lost.signal).catch((error: unknown) => error);
    expect(isHandBack(rejection), String(rejection)).to.equal(true);
    expect(await w.moved()).to.equal(0);
    await w.close();
  });

  it('isHandBack tells the signal from other errors', () => {
    expect(isHandBack(new Error('handed back'))).to.equal(false);
    expect(isHandBack('handed back')).to.equal(false);
  });
}
