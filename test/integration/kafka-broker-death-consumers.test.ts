import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { topics } from '../../services/core/bus/event-bus.ts';
import { createKafkaBus } from '../../services/core/bus/kafka-bus.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { readTopic } from '../support/kafka-raw.ts';
import {
  eventually,
  requireEnv,
  startKafkaStack,
  type KafkaStack,
} from '../support/kafka-stack.ts';

const run = promisify(execFile);

describe('Kafka: the consumers ride out the broker killed and back (real broker)', function () {
  this.timeout(300_000);
  let stack: KafkaStack | undefined;
  let kafkaCtl: string;

  after(async () => {
    if (kafkaCtl) await run('bash', [kafkaCtl, 'start']).catch(() => undefined);
    await stack?.close();
  });

  it('the ingress (status writer) and the notifier stay up while the broker is gone, and ready after', async () => {
    kafkaCtl = requireEnv('TEST_KAFKA_CTL');
    stack = await startKafkaStack({ transcoders: 0, notifiers: 1 });
    const s = stack;
    // A record scheduled for the outage: it waits in a delay topic, and the stack's processes
    // forward it once the broker is back.
    const brokers = requireEnv('TEST_KAFKA_BROKERS');
    const bus = createKafkaBus({
      brokers: brokers.split(','),
      clientId: 'broker-death-test',
      topicPrefix: s.prefix,
      logger: silentLogger,
    });
    await bus.publish([
      {
        topic: topics.transcodeRequests,
        key: 'scheduled',
        value: Buffer.from('{}'),
        notBefore: Date.now() + 5000,
      },
    ]);
    await bus.close();
    await run('bash', [kafkaCtl, 'kill']);
    await new Promise((r) => setTimeout(r, 25_000));
    await run('bash', [kafkaCtl, 'start']);
    await eventually(
      async () => (await s.submit('/transcode', { inputUrl: 'x' })).status !== 503,
      90_000,
      'submissions to be taken again',
    );
    await new Promise((r) => setTimeout(r, 5000));
    const forwarded = await readTopic(brokers, s.prefix + topics.transcodeRequests, {
      minRecords: 1,
      timeoutMs: 60_000,
    });
    expect(
      forwarded.map((r) => r.key),
      'the scheduled record, forwarded',
    ).to.deep.equal(['scheduled']);
    const processes = [...s.ingresses.map((i) => i.process), ...s.workers.notifier];
    for (const p of processes) {
      expect(p.child.exitCode, 'still running').to.equal(null);
      // A crashed consumer leaves its group: its running handlers are aborted, every member
      // rebalances, and kafkajs starts it again. The job subscriptions must not crash. The
      // delay forwarder's consumer does, as the tails' do (unlogged): kafkajs's runner gives up
      // a fetch at once on KafkaJSNoBrokerAvailableError and restarts the consumer. It holds no
      // job, and the record above shows it forwarding again.
      const crashes = p.logs.filter(
        (r) =>
          String(r['msg']).startsWith('process.') ||
          (r['msg'] === 'kafka.consumer_crashed' && r['group'] !== `${s.prefix}media-scheduler`),
      );
      const named = crashes.map((r) => {
        const error = r['error'] as { type?: string; message?: string } | undefined;
        return `${String(r['msg'])} ${String(r['group'])}: ${error?.type}: ${error?.message}`;
      });
      expect(named).to.deep.equal([]);
    }
  });
});
