import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
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
    await run('bash', [kafkaCtl, 'kill']);
    await new Promise((r) => setTimeout(r, 25_000));
    await run('bash', [kafkaCtl, 'start']);
    await eventually(
      async () => (await s.submit('/transcode', { inputUrl: 'x' })).status !== 503,
      90_000,
      'submissions to be taken again',
    );
    await new Promise((r) => setTimeout(r, 5000));
    const processes = [...s.ingresses.map((i) => i.process), ...s.workers.notifier];
    for (const p of processes) {
      expect(p.child.exitCode, 'still running').to.equal(null);
      // A crashed consumer leaves its group: its running handlers are aborted, every member
      // rebalances, and kafkajs starts it again.
      const crashes = p.logs.filter(
        (r) => String(r['msg']).startsWith('process.') || r['msg'] === 'kafka.consumer_crashed',
      );
      const named = crashes.map((r) => {
        const error = r['error'] as { type?: string; message?: string } | undefined;
        return `${String(r['msg'])} ${String(r['group'])}: ${error?.type}: ${error?.message}`;
      });
      expect(named).to.deep.equal([]);
    }
  });
});
