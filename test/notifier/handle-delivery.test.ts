import { expect } from 'chai';
import { isHandBack } from '../../services/core/bus/hand-back.ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BusUncertainError, topics, type BusRecord } from '../../services/core/bus/event-bus.ts';
import type { CallbackDelivery } from '../../services/core/contracts/types.generated.ts';
import { createGuardedHttp } from '../../services/core/net/guarded-http.ts';
import {
  createDeliveryHandler,
  type DeliveryOptions,
} from '../../services/notifier/handle-delivery.ts';
import { createHostSlots } from '../../services/notifier/host-slots.ts';
import { codec, decodeAll, log, newMetrics, recordingBus } from './notifier-fixture.ts';

const NOW = new Date('2026-03-01T12:00:00.000Z');
const policy = { backoffMs: 1000, backoffMaxMs: 3600_000, horizonMs: 24 * 3600_000 };

let base: string;
const answers = new Map<string, [number, Record<string, string>]>();
let hits = 0;
const setup = (slots = createHostSlots(2), extra: Partial<DeliveryOptions> = {}) => {
  const bus = recordingBus();
  const metrics = newMetrics();
  const handler = createDeliveryHandler(
    {
      bus,
      codec,
      http: createGuardedHttp({ allowPrivateNetworks: true }),
      log,
      metrics,
      clock: { now: () => NOW },
    },
    {
      policy,
      timeoutMs: 2000,
      hostSlots: slots,
      secretFor: () => undefined,
      random: () => 0.5,
      ...extra,
    },
  );
  return { bus, metrics, handler, slots };
};
const record = (path: string, extra: Partial<CallbackDelivery> = {}): BusRecord => {
  const data: CallbackDelivery = {
    webhookId: 'w-1',
    jobId: '6f1c2e0a-0000-4000-8000-000000000001',
    orgId: 'org-a',
    url: base + path,
    body: { a: 1 },
    attempt: 1,
    ...extra,
  };
  return { ...codec.encode(topics.callbacks, 'media.callback.delivery', data), headers: {} };
};
/** A memory of settled delivery records, as job-outcomes.ts keeps one. */
const rememberingHandled = (): NonNullable<DeliveryOptions['handled']> => {
  const seen = new Set<string>();
  return {
    has: (jobId, eventId) => seen.has(`${jobId}/${eventId}`),
    add: (jobId, eventId) => void seen.add(`${jobId}/${eventId}`),
  };
};
const context = (signal = new AbortController().signal) => ({
  signal,
  heartbeat: async () => {},
  waitOnly: () => {},
  begin: () => Promise.resolve(),
});

describe('callback delivery handler (one attempt, outcome on the bus)', () => {
  let receiver: Server;
  before(async () => {
    receiver = createServer((req, res) => {
      hits++;
      const [status, headers] = answers.get(req.url ?? '') ?? [200, {}];
      res.writeHead(status, headers).end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  after(() => receiver.close());

  describesA429WithRetryAfter();

  describesCountsEachAttemptByWhat();

  describesGivesUpOnceTheHorizon();

  describesADeliveryRecordReadAgain();

  describesTwoCopiesOfOneRecord();
});

function describesA429WithRetryAfter(): void {
  it('a 429 with Retry-After schedules attempt 2 no sooner than it says, and reports retrying', async () => {
    answers.set('/busy', [429, { 'retry-after': '120' }]);
    const { bus, handler } = setup();
    await handler(record('/busy'), context());
    const next = bus.published.find((r) => r.topic === topics.callbacks);
    expect(next?.notBefore).to.equal(NOW.getTime() + 120_000);
    const [delivery, status] = decodeAll(bus.published);
    expect(delivery?.data).to.deep.include({
      attempt: 2,
      webhookId: 'w-1',
      firstAttemptAt: NOW.toISOString(),
    });
    expect(status?.type).to.equal('media.callback.status');
    expect(status?.data).to.deep.include({
      state: 'retrying',
      attempts: 1,
      lastStatus: 429,
      lastError: 'answered 429',
      nextAttemptAt: new Date(NOW.getTime() + 120_000).toISOString(),
    });
  });

  it('keeps the first attempt time of a retry, so the horizon is not reset', async () => {
    answers.set('/down', [503, {}]);
    const { bus, handler } = setup();
    const firstAttemptAt = new Date(NOW.getTime() - 3600_000).toISOString();
    await handler(record('/down', { attempt: 7, firstAttemptAt }), context());
    const [delivery] = decodeAll(bus.published);
    expect(delivery?.data).to.deep.include({ attempt: 8, firstAttemptAt });
    expect(bus.published[0]?.notBefore).to.equal(NOW.getTime() + 32_000);
  });

  it('a permanent 4xx gives up at once: status given_up and a dead letter, no retry', async () => {
    answers.set('/gone', [410, {}]);
    const { bus, handler, metrics } = setup();
    await handler(record('/gone'), context());
    expect(bus.published.filter((r) => r.topic === topics.callbacks)).to.have.length(0);
    expect(decodeAll(bus.published)[0]?.data).to.deep.include({
      state: 'given_up',
      attempts: 1,
      lastStatus: 410,
    });
    const dead = bus.published.find((r) => r.topic === topics.deadLetter);
    expect(JSON.parse(dead?.value.toString() ?? '{}')).to.include({ reason: 'callback_rejected' });
    expect(
      (await metrics.callbacks.get()).values.find((v) => v.labels['outcome'] === 'given_up')?.value,
    ).to.equal(1);
  });
}

function describesCountsEachAttemptByWhat(): void {
  it('counts each attempt by what it met: the status class, a time-out, a network error, a refused address', async () => {
    answers.set('/ok', [204, {}]);
    answers.set('/gone', [410, {}]);
    answers.set('/down', [503, {}]);
    const { handler, metrics } = setup();
    for (const path of ['/ok', '/gone', '/down', '/down']) await handler(record(path), context());
    const refused = setup();
    await refused.handler(
      {
        ...record('/x'),
        ...codec.encode(topics.callbacks, 'media.callback.delivery', {
          webhookId: 'w-2',
          jobId: '6f1c2e0a-0000-4000-8000-000000000002',
          orgId: 'org-a',
          url: 'http://127.0.0.1:1/closed',
          body: {},
          attempt: 1,
        }),
        headers: {},
      },
      context(),
    );
    const count = async (m: typeof metrics, result: string) =>
      (await m.callbackAttempts.get()).values.find((v) => v.labels['result'] === result)?.value;
    expect(await count(metrics, '2xx')).to.equal(1);
    expect(await count(metrics, '4xx')).to.equal(1);
    expect(await count(metrics, '5xx')).to.equal(2);
    expect(await count(metrics, 'timeout')).to.equal(0);
    expect(await count(refused.metrics, 'network_error')).to.equal(1);
  });

  it('sends the trace context of the record on the callback request', async () => {
    let seen: string | undefined;
    const traced = createServer((req, res) => {
      seen = req.headers['traceparent'] as string | undefined;
      res.writeHead(200).end();
    });
    await new Promise<void>((r) => traced.listen(0, '127.0.0.1', r));
    try {
      const { handler } = setup();
      const url = `http://127.0.0.1:${(traced.address() as AddressInfo).port}/t`;
      const parent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const r = record('/t', { url });
      await handler({ ...r, headers: { traceparent: parent } }, context());
      // Tracing off here: the no-op span carries its parent's context unchanged.
      expect(seen).to.equal(parent);
    } finally {
      traced.close();
    }
  });
}

function describesGivesUpOnceTheHorizon(): void {
  it('gives up once the horizon since the first attempt has passed', async () => {
    answers.set('/down', [503, {}]);
    const { bus, handler } = setup();
    await handler(
      record('/down', {
        attempt: 40,
        firstAttemptAt: new Date(NOW.getTime() - 24 * 3600_000 + 100).toISOString(),
      }),
      context(),
    );
    expect(bus.published.filter((r) => r.topic === topics.callbacks)).to.have.length(0);
    expect(decodeAll(bus.published)[0]?.data).to.deep.include({ state: 'given_up', attempts: 40 });
    expect(
      JSON.parse(
        bus.published.find((r) => r.topic === topics.deadLetter)?.value.toString() ?? '{}',
      ),
    ).to.include({ reason: 'callback_exhausted' });
  });

  it('a host at its bound is not waited for: the record goes back with a short due time, not as an attempt', async () => {
    const slots = createHostSlots(1);
    slots.tryAcquire(new URL(base).host);
    const { bus, handler } = setup(slots);
    const before = hits;
    const original = record('/ok');
    await handler(original, context());
    expect(hits).to.equal(before);
    expect(bus.published).to.have.length(1);
    expect(bus.published[0]?.value.equals(original.value)).to.equal(true);
    expect(bus.published[0]?.notBefore).to.equal(NOW.getTime() + 1000);
  });

  it('a record lost during its attempt does not cut the request short: one the receiver answers 2xx is settled as delivered', async () => {
    let requests = 0;
    const slow = createServer((_req, res) => {
      requests++;
      setTimeout(() => res.writeHead(200).end(), 300);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const { bus, handler } = setup();
    const lost = new AbortController();
    const pending = handler(
      record('/', { url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/` }),
      context(lost.signal),
    );
    setTimeout(() => lost.abort(new Error('the consumer crashed')), 50);
    await pending;
    expect(requests).to.equal(1);
    const statuses = decodeAll(bus.published).filter((e) => e.type === 'media.callback.status');
    expect(statuses.map((e) => (e.data as { state: string }).state)).to.deep.equal(['delivered']);
    slow.close();
  });

  it('an attempt cut short by a stop past its grace is handed back, not counted', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const stop = new AbortController();
    const { bus, handler } = setup(createHostSlots(2), { stopped: stop.signal });
    const data = {
      webhookId: 'w',
      jobId: '6f1c2e0a-0000-4000-8000-000000000002',
      orgId: 'org-a',
      url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`,
      body: {},
      attempt: 2,
    };
    const pending = handler(
      { ...codec.encode(topics.callbacks, 'media.callback.delivery', data), headers: {} },
      context(stop.signal),
    );
    setTimeout(() => stop.abort(), 50);
    let rejection: unknown;
    await pending.catch((error: unknown) => (rejection = error));
    expect(isHandBack(rejection), String(rejection)).to.equal(true);
    expect(bus.published).to.have.length(0);
    silent.closeAllConnections();
    silent.close();
  });
}

function describesADeliveryRecordReadAgain(): void {
  it('a delivery record read again (same event id) makes no second attempt once the first settled', async () => {
    const { bus, handler } = setup(createHostSlots(2), { handled: rememberingHandled() });
    const once = record('/twice');
    const before = hits;
    await handler(once, context());
    await handler(once, context());
    expect(hits - before, 'requests to the receiver').to.equal(1);
    // A new record of the same callback (a manual redelivery) is a new attempt.
    await handler(record('/twice'), context());
    expect(hits - before, 'requests to the receiver').to.equal(2);
    expect(
      decodeAll(bus.published).filter((e) => e.type === 'media.callback.status'),
    ).to.have.length(2);
  });

  it("the next attempt has a stable id in the record's chain, and each status names the record it settles", async () => {
    answers.set('/chain', [503, {}]);
    const first = {
      ...codec.encode(
        topics.callbacks,
        'media.callback.delivery',
        {
          webhookId: 'w-1',
          jobId: '6f1c2e0a-0000-4000-8000-000000000001',
          orgId: 'org-a',
          url: `${base}/chain`,
          body: { a: 1 },
          attempt: 1,
        },
        'w-1:callback:1',
      ),
      headers: {},
    };
    const { bus, handler } = setup();
    // Without a memory of settled records (a crash before the commit), the attempt is made
    // again, but its outcome names the same next record: one retry chain, not two.
    await handler(first, context());
    await handler(first, context());
    const events = decodeAll(bus.published);
    const next = events.filter((e) => e.type === 'media.callback.delivery');
    expect(next.map((e) => e.id)).to.deep.equal(['w-1:callback:2', 'w-1:callback:2']);
    const statuses = events.filter((e) => e.type === 'media.callback.status');
    expect(statuses.map((e) => (e.data as { deliveryId?: string }).deliveryId)).to.deep.equal([
      'w-1:callback:1',
      'w-1:callback:1',
    ]);
  });
}

function describesTwoCopiesOfOneRecord(): void {
  it('two copies of one record in flight at once make one attempt', async () => {
    const { handler } = setup();
    const once = record('/in-flight-twice');
    const before = hits;
    await Promise.all([handler(once, context()), handler(once, context())]);
    expect(hits - before, 'requests to the receiver').to.equal(1);
  });

  it('an attempt made is not made again because its outcome was slow to publish: the publish is tried again', async () => {
    const { bus, handler } = setup();
    let refusals = 2;
    bus.publish = async (records) => {
      if (refusals-- > 0) throw new BusUncertainError('publish: no answer in time');
      bus.published.push(...records);
    };
    const before = hits;
    await handler(record('/slow-outcome'), context());
    expect(hits - before, 'requests to the receiver').to.equal(1);
    const [status] = decodeAll(bus.published);
    expect(status?.data).to.deep.include({ state: 'delivered', attempts: 1 });
  });

  it('a delivered attempt whose record is lost keeps publishing its status until acknowledged, and a copy read meanwhile makes no attempt', async () => {
    const { bus, handler } = setup(createHostSlots(2), { handled: rememberingHandled() });
    const lost = new AbortController();
    let refusals = 3;
    bus.publish = async (records) => {
      lost.abort(new Error('the consumer crashed'));
      if (refusals-- > 0) throw new BusUncertainError('publish: no answer in time');
      bus.published.push(...records);
    };
    const once = record('/status-record-lost');
    const before = hits;
    const first = handler(once, context(lost.signal));
    const copy = handler(once, context());
    await Promise.all([first, copy]);
    expect(refusals, 'publishes refused before the status landed').to.equal(-1);
    expect(hits - before, 'requests to the receiver').to.equal(1);
    const statuses = decodeAll(bus.published).filter((e) => e.type === 'media.callback.status');
    expect(statuses.map((e) => (e.data as { state: string }).state)).to.deep.equal(['delivered']);
  });

  it('a delivered attempt whose status tries a stop past its grace ended is not made again: the copy read again publishes the status', async () => {
    const stopped = new AbortController();
    const { bus, handler } = setup(createHostSlots(2), {
      handled: rememberingHandled(),
      stopped: stopped.signal,
    });
    bus.publish = async () => {
      stopped.abort(new Error('grace ran out'));
      throw new BusUncertainError('publish: no answer in time');
    };
    const once = record('/status-cut-short');
    const before = hits;
    const first = await handler(once, context()).then(
      () => 'resolved',
      () => 'rejected',
    );
    expect(first, 'the first copy').to.equal('rejected');
    expect(bus.published).to.have.length(0);
    bus.publish = async (records) => void bus.published.push(...records);
    await handler(once, context());
    await handler(once, context());
    expect(hits - before, 'requests to the receiver').to.equal(1);
    const statuses = decodeAll(bus.published).filter((e) => e.type === 'media.callback.status');
    expect(statuses.map((e) => (e.data as { state: string }).state)).to.deep.equal(['delivered']);
  });
}
