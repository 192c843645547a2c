// Issue 28, item 4: on the three-broker cluster the service creates its topics with 3 replicas
// and min.insync.replicas 2, refuses to start on a less durable existing topic (or warns, with
// KAFKA_ALLOW_LESS_DURABLE_TOPICS), and on the single test broker nothing changes.
import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { randomBytes } from 'node:crypto';
import { topics } from '../../services/core/bus/event-bus.ts';
import { createKafkaBus, type KafkaBusOptions } from '../../services/core/bus/kafka-bus.ts';
import { TopicDurabilityError } from '../../services/core/bus/topic-durability.ts';
import { createLogger } from '../../services/core/observability/logger.ts';
import { kafkaCluster, startKafkaCluster } from '../support/kafka-cluster.ts';
import { deleteTopicsWithPrefix, onceTopicsKnown, withAdmin } from '../support/kafka-raw.ts';
import { brokers as singleBroker, newPrefix } from '../support/kafka-test-names.ts';
import { spawnService } from '../support/spawn-service.ts';

const { ConfigResourceTypes } = kafkajs;
// DescribeConfigs' config source of a value set on the topic itself (KIP-226).
const TOPIC_CONFIG_SOURCE = 1;

let cluster: string[] = [];
let logLines: string[] = [];
const prefixes: { brokers: string[]; prefix: string }[] = [];
let closers: Array<() => Promise<void>> = [];
const newBus = (brokers: string[], options: Partial<KafkaBusOptions> = {}) => {
  const prefix = newPrefix();
  prefixes.push({ brokers, prefix });
  const bus = createKafkaBus({
    brokers,
    clientId: 'durability-test',
    topicPrefix: prefix,
    logger: createLogger({ level: 'info', write: (line) => logLines.push(line) }),
    ...options,
  });
  closers.push(() => bus.close());
  return { bus, prefix };
};
const logged = (msg: string): Record<string, unknown>[] =>
  logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r['msg'] === msg);

describe('Kafka topic durability (three-broker cluster and single broker)', function () {
  this.timeout(240_000);

  before(async () => {
    cluster = await startKafkaCluster();
  });

  afterEach(async function () {
    await Promise.allSettled(closers.map((close) => close()));
    closers = [];
    if (this.currentTest?.state === 'failed') console.error(logLines.slice(-40).join('\n'));
    logLines = [];
  });

  after(async () => {
    for (const { brokers, prefix } of prefixes) {
      await deleteTopicsWithPrefix(brokers, prefix).catch(() => undefined);
    }
    await kafkaCluster('cluster-stop');
  });

  describesCreatesTopic3Replicas();

  describesRefusesExistingTopicReplica();

  describesServiceStartedSuchTopic();

  describesSingleTestBrokerKeeps();
});

function describesCreatesTopic3Replicas(): void {
  it('creates every topic with 3 replicas and min.insync.replicas 2 set on the topic, and logs each', async () => {
    const { bus, prefix } = newBus(cluster);
    const report = await bus.ensureTopics();
    const names = Object.values(topics).map((t) => prefix + t);
    expect(report.map((t) => t.topic)).to.have.members(names);
    for (const t of report)
      expect(t).to.include({ created: true, replicas: 3, minInsyncReplicas: 2 });

    const described = await withAdmin(cluster, (admin) =>
      onceTopicsKnown(async () => ({
        metadata: await admin.fetchTopicMetadata({ topics: names }),
        configs: await admin.describeConfigs({
          includeSynonyms: false,
          resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
        }),
      })),
    );
    for (const t of described.metadata.topics)
      for (const p of t.partitions)
        expect(p.replicas, `${t.name}/${p.partitionId}`).to.have.length(3);
    for (const r of described.configs.resources) {
      const entry = r.configEntries.find((e) => e.configName === 'min.insync.replicas');
      expect(entry?.configValue, r.resourceName).to.equal('2');
      expect(entry?.configSource, `${r.resourceName}: set on the topic`).to.equal(
        TOPIC_CONFIG_SOURCE,
      );
    }
    // The brokers' own default is 1: the 2 is the service's doing.
    const broker = await withAdmin(cluster, (admin) =>
      admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          { type: ConfigResourceTypes.BROKER, name: '1', configNames: ['min.insync.replicas'] },
        ],
      }),
    );
    expect(broker.resources[0]?.configEntries[0]?.configValue).to.equal('1');

    const lines = logged('kafka.topic_durability');
    expect(lines.map((l) => l['topic'])).to.have.members(names);
    for (const l of lines) expect(l).to.include({ replicas: 3, minInsyncReplicas: 2 });
  });
}

function describesRefusesExistingTopicReplica(): void {
  it('refuses an existing topic with one replica, naming it and the switch; the switch makes it a warning', async () => {
    const { bus, prefix } = newBus(cluster);
    const weak = prefix + topics.transcodeRequests;
    await withAdmin(cluster, (admin) =>
      admin.createTopics({
        waitForLeaders: false,
        topics: [{ topic: weak, numPartitions: 2, replicationFactor: 1 }],
      }),
    );
    const refused = await bus.ensureTopics().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).to.be.instanceOf(TopicDurabilityError);
    expect(String((refused as Error).message)).to.contain(
      `${weak} (1 replicas, 3 configured; min.insync.replicas 1, 2 configured)`,
    );
    expect((refused as Error).message).to.contain('KAFKA_ALLOW_LESS_DURABLE_TOPICS=true');

    const allowed = createKafkaBus({
      brokers: cluster,
      clientId: 'durability-test',
      topicPrefix: prefix,
      allowLessDurableTopics: true,
      logger: createLogger({ level: 'info', write: (line) => logLines.push(line) }),
    });
    closers.push(() => allowed.close());
    const report = await allowed.ensureTopics();
    expect(report.find((t) => t.topic === weak)).to.include({
      created: false,
      replicas: 1,
      minInsyncReplicas: 1,
    });
    expect(report.filter((t) => t.topic !== weak).every((t) => t.replicas === 3)).to.equal(true);
    const warnings = logged('kafka.topics_durability_warning');
    expect(warnings.map((w) => w['reason'])).to.satisfy((reasons: unknown[]) =>
      reasons.some((r) => String(r).includes(`${weak} (1 replicas`)),
    );
  });
}

function describesServiceStartedSuchTopic(): void {
  it('a service started on such a topic exits with a configuration error, and starts with the switch', async () => {
    const prefix = newPrefix();
    prefixes.push({ brokers: cluster, prefix });
    await withAdmin(cluster, (admin) =>
      admin.createTopics({
        waitForLeaders: false,
        topics: [{ topic: prefix + topics.jobEvents, numPartitions: 1, replicationFactor: 1 }],
      }),
    );
    const env = {
      KAFKA_BROKERS: cluster.join(','),
      KAFKA_TOPIC_PREFIX: prefix,
      KAFKA_PARTITIONS: '2',
      WEBHOOK_SECRETS: `org-k:whsec_${randomBytes(32).toString('base64')}`,
      CREDENTIALS_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      LOG_LEVEL: 'info',
    };
    const notifier = new URL('../../services/notifier/main.ts', import.meta.url).pathname;
    const refused = spawnService(notifier, env);
    let stderr = '';
    refused.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => refused.child.once('exit', resolve));
    expect(code, stderr).to.equal(2);
    expect(stderr).to.match(
      new RegExp(
        `configuration error: topics less durable than configured: ${prefix.replaceAll('.', '\\.')}${topics.jobEvents.replaceAll('.', '\\.')} \\(1 replicas`,
      ),
    );

    const started = spawnService(notifier, { ...env, KAFKA_ALLOW_LESS_DURABLE_TOPICS: 'true' });
    closers.push(() => started.stop(8000).then(() => undefined));
    await started.waitForLog((r) => r['msg'] === 'notifier.started', 90_000);
    expect(started.logs.some((r) => r['msg'] === 'kafka.topics_durability_warning')).to.equal(true);
  });
}

function describesSingleTestBrokerKeeps(): void {
  it('on the single test broker keeps one replica and leaves min.insync.replicas to the broker', async () => {
    const { bus, prefix } = newBus(singleBroker());
    const report = await bus.ensureTopics();
    for (const t of report)
      expect(t).to.include({ created: true, replicas: 1, minInsyncReplicas: 1 });
    expect(logged('kafka.topics_durability_warning')).to.deep.equal([]);
    const configs = await withAdmin(singleBroker(), (admin) =>
      admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: prefix + topics.transcodeRequests }],
      }),
    );
    const entry = configs.resources[0]?.configEntries.find(
      (e) => e.configName === 'min.insync.replicas',
    );
    expect(entry?.configSource, 'not set on the topic').to.not.equal(TOPIC_CONFIG_SOURCE);
    // Started again on what it created, it lets the topics through as they are.
    const again = await createKafkaBus({
      brokers: singleBroker(),
      topicPrefix: prefix,
      logger: createLogger({ level: 'silent' }),
    }).ensureTopics();
    expect(again.every((t) => !t.created && t.replicas === 1)).to.equal(true);
  });
}
