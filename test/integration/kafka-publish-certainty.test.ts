import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { BusUncertainError, topics } from '../../services/core/bus/event-bus.ts';
import { createKafkaBus, type KafkaBus } from '../../services/core/bus/kafka-bus.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { eventually } from '../support/kafka-stack.ts';
import { brokers, newPrefix } from '../support/kafka-test-names.ts';

const { Kafka } = kafkajs;

/**
 * A broker that answers (connects, metadata) while a topic takes no write: the single test
 * broker with the job topic deleted (and no auto-creation) refuses every produce to it, as a
 * cluster does to a partition whose leader is gone. (Raising the topic's min.insync.replicas
 * above its one replica does not do it: Kafka 4.1 still takes the write.)
 */
describe('Kafka bus: a publish that fails while the broker answers (real broker)', function () {
  this.timeout(60_000);
  const admin = new Kafka({ clientId: 'publish-certainty-test', brokers: brokers() }).admin();
  let bus: KafkaBus | undefined;

  before(() => admin.connect());
  after(async () => {
    await bus?.close();
    await admin.disconnect();
  });

  it('answers uncertain, and /readyz stays not ready until the partitions take writes again', async () => {
    const prefix = newPrefix();
    const topic = prefix + topics.transcodeRequests;
    bus = createKafkaBus({
      brokers: brokers(),
      topicPrefix: prefix,
      logger: silentLogger,
      publishTimeoutMs: 4000,
    });
    await bus.ensureTopics();
    const record = { topic: topics.transcodeRequests, key: 'job-1', value: Buffer.from('{}') };
    await bus.publish([record]);
    expect(await bus.isReady()).to.equal(true);

    await admin.deleteTopics({ topics: [topic] });
    await eventually(
      async () => !(await admin.listTopics()).includes(topic),
      20_000,
      'the topic gone',
    );
    const error: unknown = await bus.publish([record]).catch((e: unknown) => e);
    expect(error, 'sent to the broker, unconfirmed').to.be.instanceOf(BusUncertainError);
    // The broker still connects and answers metadata: only the topic cannot be written.
    expect(await bus.isReady()).to.equal(false);
    expect(await bus.isReady()).to.equal(false);

    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    expect(await bus.isReady(), 'the probe finds the topic writable').to.equal(true);
    await bus.publish([record]);
  });
});
