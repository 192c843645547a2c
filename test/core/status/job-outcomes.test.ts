import { expect } from 'chai';
import { createEmbeddedBus } from '../../../services/core/bus/embedded-bus.ts';
import { topics, type EventBus } from '../../../services/core/bus/event-bus.ts';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import { createEventCodec } from '../../../services/core/events/event-codec.ts';
import { silentLogger } from '../../../services/core/observability/logger.ts';
import { startJobOutcomes } from '../../../services/core/status/job-outcomes.ts';

const codec = createEventCodec(loadContracts(), 'test');
const JOB = '6f1c2e0a-0000-4000-8000-000000000001';
const WEBHOOK = `${JOB}:media.job.succeeded:1`;

const callbackStatus = (deliveryId: string, attempts: number) =>
  codec.encode(topics.jobEvents, 'media.callback.status', {
    jobId: JOB,
    orgId: 'org-a',
    webhookId: WEBHOOK,
    state: 'retrying',
    attempts,
    deliveryId,
    at: new Date().toISOString(),
  });

describe('job outcomes: the callback statuses (a notifier)', () => {
  let bus: EventBus;
  beforeEach(() => {
    bus = createEmbeddedBus({ path: ':memory:' });
  });
  afterEach(() => bus.close());

  it('knows the delivery records settled before its start, by chain and attempt', async () => {
    await bus.publish([callbackStatus(`${WEBHOOK}:callback:2`, 2)]);
    const outcomes = await startJobOutcomes({ bus, log: silentLogger, codec }, { callbacks: true });
    try {
      expect(outcomes.deliveryHandled(JOB, `${WEBHOOK}:callback:1`)).to.equal(true);
      expect(outcomes.deliveryHandled(JOB, `${WEBHOOK}:callback:2`)).to.equal(true);
      expect(outcomes.deliveryHandled(JOB, `${WEBHOOK}:callback:3`)).to.equal(false);
      expect(outcomes.deliveryHandled(JOB, 'other-chain:callback:1')).to.equal(false);
      expect(outcomes.claimCallback(JOB, WEBHOOK), 'a callback already tried').to.equal(false);
    } finally {
      await outcomes.close();
    }
  });

  it('follows the callback statuses published after its start', async () => {
    const outcomes = await startJobOutcomes({ bus, log: silentLogger, codec }, { callbacks: true });
    try {
      expect(outcomes.deliveryHandled(JOB, `${WEBHOOK}:callback:1`)).to.equal(false);
      await bus.publish([callbackStatus(`${WEBHOOK}:callback:1`, 1)]);
      const end = Date.now() + 5000;
      while (!outcomes.deliveryHandled(JOB, `${WEBHOOK}:callback:1`) && Date.now() < end)
        await new Promise((r) => setTimeout(r, 10));
      expect(outcomes.deliveryHandled(JOB, `${WEBHOOK}:callback:1`)).to.equal(true);
    } finally {
      await outcomes.close();
    }
  });

  it('without `callbacks` (a worker) reads no callback statuses', async () => {
    await bus.publish([callbackStatus(`${WEBHOOK}:callback:1`, 1)]);
    const outcomes = await startJobOutcomes({ bus, log: silentLogger, codec });
    try {
      expect(outcomes.deliveryHandled(JOB, `${WEBHOOK}:callback:1`)).to.equal(false);
    } finally {
      await outcomes.close();
    }
  });
});
