import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { requireEnv, startKafkaStack, type KafkaStack } from '../support/kafka-stack.ts';
import { cpuMs, cpuShareOver } from '../support/process-cpu.ts';

const run = promisify(execFile);
const GRACE_MS = 5000;

// Every broker stopped under a running worker, then SIGTERM: it idles while the brokers are gone
// (no loop spinning on fetches that fail at once) and exits within its grace (issue 28). The test
// broker is the suite's one, stopped and started again as kafka-faults.test.ts does.
describe('Kafka: a worker whose brokers are all gone', function () {
  this.timeout(180_000);
  let stack: KafkaStack;
  let kafkaCtl: string;

  before(async () => {
    kafkaCtl = requireEnv('TEST_KAFKA_CTL');
    requireEnv('TEST_SERVICES_STATE_DIR');
    stack = await startKafkaStack({
      ingresses: 0,
      transcoders: 1,
      notifiers: 0,
      extraEnv: { SHUTDOWN_GRACE_MS: String(GRACE_MS) },
    });
  });
  after(async () => {
    if (kafkaCtl) await run('bash', [kafkaCtl, 'start']);
    await stack?.close();
  });

  it('idles while they are gone, and SIGTERM ends it within the grace', async () => {
    const [worker] = stack.workers.transcoder;
    const pid = worker?.child.pid;
    if (!worker || pid === undefined) throw new Error('no transcoder');
    await run('bash', [kafkaCtl, 'stop']);
    // Its consumers notice: connections refused, retries, a crash of the consumer.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const share = await cpuShareOver(pid, 5000);
    console.log(`      CPU while the brokers are gone: ${(share * 100).toFixed(1)} % of a core`);
    expect(share, 'share of a core').to.be.below(0.1);

    const before = cpuMs(pid);
    const exited = new Promise<number | null>((resolve) => worker.child.once('exit', resolve));
    const signalled = performance.now();
    let cpuToExit = 0;
    const sampler = setInterval(() => {
      try {
        cpuToExit = cpuMs(pid) - before;
      } catch {
        // Gone.
      }
    }, 100);
    worker.child.kill('SIGTERM');
    const timer = setTimeout(() => worker.child.kill('SIGKILL'), GRACE_MS + 60_000);
    const code = await exited;
    const ms = performance.now() - signalled;
    clearTimeout(timer);
    clearInterval(sampler);
    console.log(`      exited ${code} in ${ms.toFixed(0)} ms, ${cpuToExit.toFixed(0)} ms of CPU`);
    expect(code).to.equal(0);
    expect(ms).to.be.below(GRACE_MS);
    expect(worker.logs.map((r) => r['msg'])).to.include('worker.drained');
  });
});
