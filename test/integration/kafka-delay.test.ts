import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { startDelayForwarder } from '../../services/core/bus/kafka-delay.ts';
import { createDisconnect } from '../../services/core/bus/kafka-support.ts';
import { createKafkaBus, type KafkaBus } from '../../services/core/bus/kafka-bus.ts';
import { topics, type BusRecord, type Subscription } from '../../services/core/bus/event-bus.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import { brokers, newGroup, newPrefix, sleep, until } from '../support/kafka-test-names.ts';
import { spoiledKafka, type Spoil } from '../support/spoiled-kafka.ts';

// Scheduled records (notBefore) on a real broker: the delay topics and their forwarder.

let logLines: string[] = [];
let closers: Array<() => Promise<void>> = [];
const newBus = (prefix: string): KafkaBus => {
  const bus = createKafkaBus({
    brokers: brokers(),
    clientId: 'kafka-delay-test',
    topicPrefix: prefix,
    logger: createLogger({ level: 'warn', write: (line) => logLines.push(line) }),
    maxWaitTimeMs: 200,
    sessionTimeoutMs: 6000,
  });
  closers.push(() => bus.close());
  return bus;
};
const collect = async (
  bus: KafkaBus,
  group = newGroup(),
): Promise<{ got: { record: BusRecord; at: number }[]; sub: Subscription }> => {
  const got: { record: BusRecord; at: number }[] = [];
  const sub = await bus.subscribe({
    group,
    topics: [topics.transcodeRequests],
    fromBeginning: true,
    handler: async (record) => void got.push({ record, at: Date.now() }),
  });
  closers.push(() => sub.close(0));
  return { got, sub };
};

describe('Kafka bus: scheduled records through the delay topics (real broker)', function () {
  this.timeout(60_000);

  afterEach(async function () {
    await Promise.allSettled(closers.reverse().map((close) => close()));
    closers = [];
    if (this.currentTest?.state === 'failed') console.error(logLines.slice(-60).join('\n'));
    logLines = [];
  });

  describesDeliversRecordEarlierDue();
});

function describesDeliversRecordEarlierDue(): void {
  it('delivers a record no earlier than its due time, and it holds no partition meanwhile', async () => {
    const bus = newBus(newPrefix());
    const { got } = await collect(bus);
    const due = Date.now() + 3000;
    const record = (value: string, notBefore?: number) => ({
      topic: topics.transcodeRequests,
      key: 'same-key',
      value: Buffer.from(value),
      headers: { 'ce-type': 'media.job.requested' },
      ...(notBefore === undefined ? {} : { notBefore }),
    });
    await bus.publish([record('scheduled', due)]);
    // Same key, so the same partition: a record waiting in place would hold this one back.
    await bus.publish([record('immediate')]);

    await until(() => got.length === 2, 20_000, 'both records');
    expect(got.map((g) => g.record.value.toString())).to.deep.equal(['immediate', 'scheduled']);
    expect(got[0]?.at).to.be.lessThan(due);
    const scheduled = got[1];
    expect(scheduled?.at).to.be.at.least(due);
    expect(scheduled?.at).to.be.at.most(due + 5000);
    expect(scheduled?.record.topic).to.equal(topics.transcodeRequests);
    expect(scheduled?.record.key).to.equal('same-key');
    expect(scheduled?.record.headers).to.deep.equal({ 'ce-type': 'media.job.requested' });
    await sleep(1000);
    expect(got).to.have.length(2);
  });

  it('a scheduled record survives the forwarding process closing; the next bus forwards it', async () => {
    const prefix = newPrefix();
    const first = newBus(prefix);
    const group = newGroup();
    const early = await collect(first, group);
    const due = Date.now() + 4000;
    await first.publish([
      { topic: topics.transcodeRequests, key: 'durable', value: Buffer.from('x'), notBefore: due },
    ]);
    await sleep(1500);
    await early.sub.close(0);
    await first.close();
    expect(early.got).to.have.length(0);

    const second = newBus(prefix);
    const { got } = await collect(second, group);
    await until(() => got.length === 1, 30_000, 'the scheduled record');
    expect(got[0]?.record.key).to.equal('durable');
    expect(got[0]?.at).to.be.at.least(due);
    await sleep(1000);
    expect(got).to.have.length(1);
  });
}

// The forwarder on its own, with a Kafka client whose first consumer is spoiled: it runs without
// ever fetching (as a consumer stuck after a broker's restart did on CI), or kafkajs gives it up
// after a crash. Scheduled records must still move: the forwarder replaces the consumer.
describe('Kafka delay forwarder: a consumer that stops is replaced (real broker)', function () {
  this.timeout(60_000);
  let log: string[] = [];
  afterEach(async function () {
    await Promise.allSettled(closers.reverse().map((close) => close()));
    closers = [];
    if (this.currentTest?.state === 'failed') console.error(log.slice(-60).join('\n'));
    log = [];
  });

  for (const spoil of ['never fetches', 'crashes, not restarted'] as const)
    it(`the first consumer ${spoil}: a record due in 1 s is forwarded by its replacement`, async () => {
      const prefix = newPrefix();
      const bus = newBus(prefix);
      const forwarded = await forwardedRecords(prefix, bus, spoil, (line) => log.push(line));
      const due = Date.now() + 1000;
      await bus.publish([
        { topic: topics.transcodeRequests, key: 'k', value: Buffer.from('late'), notBefore: due },
      ]);
      await until(() => forwarded.length === 1, 30_000, 'the record forwarded');
      expect(forwarded[0]?.at).to.be.at.least(due);
      expect(log.some((l) => l.includes('kafka.consumer_replaced'))).to.equal(true);
    });
});

/**
 * Starts a forwarder of `prefix`'s delay topics whose first consumer is spoiled as `spoil` says,
 * and answers the records it forwards to the transcode topic as they arrive.
 */
async function forwardedRecords(
  prefix: string,
  bus: KafkaBus,
  spoil: Spoil,
  write: (line: string) => void,
): Promise<{ at: number }[]> {
  await bus.ensureTopics();
  const logger = createLogger({ level: 'info', write });
  const kafka = new kafkajs.Kafka({
    clientId: 'delay-forwarder-test',
    brokers: brokers(),
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const spoiled = spoiledKafka(kafka, spoil);
  const producer = kafka.producer();
  await producer.connect();
  closers.push(() => producer.disconnect());
  const forwarder = await startDelayForwarder(spoiled, logger, {
    settings: {
      topicPrefix: prefix,
      sessionTimeoutMs: 6000,
      heartbeatIntervalMs: 500,
      rebalanceTimeoutMs: 6000,
      maxWaitTimeMs: 200,
      redeliveryDelayMs: 500,
      abortWaitMs: 1000,
      disconnect: createDisconnect(logger, 5000),
      stallMs: 3000,
    },
    send: async (topicMessages) => void (await producer.sendBatch({ topicMessages, acks: -1 })),
  });
  closers.push(() => forwarder.close());
  const forwarded: { at: number }[] = [];
  const reader = kafka.consumer({ groupId: newGroup() });
  await reader.connect();
  closers.push(() => reader.disconnect());
  await reader.subscribe({ topic: prefix + topics.transcodeRequests, fromBeginning: true });
  await reader.run({ eachMessage: async () => void forwarded.push({ at: Date.now() }) });
  return forwarded;
}
