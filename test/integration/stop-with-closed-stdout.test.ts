import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKafkaStack, type KafkaStack } from '../support/kafka-stack.ts';
import { freePort, spawnService, type SpawnedService } from '../support/spawn-service.ts';

const GRACE_MS = 5000;
const allInOne = new URL('../../services/all-in-one/main.ts', import.meta.url).pathname;

/**
 * The reader of the service's stdout goes away (a log shipper restarting, a closed terminal),
 * then SIGTERM: the service drains and exits within SHUTDOWN_GRACE_MS, and says on stderr that
 * it dropped log lines. pino's own exit flush retried the broken pipe forever (issue 28).
 */
async function closeReaderThenStop(
  service: SpawnedService,
): Promise<{ code: number | null; ms: number; stderr: string }> {
  let stderr = '';
  service.child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => service.child.once('exit', resolve));
  service.child.stdout?.destroy();
  // The reader is gone before the service logs again: its stop's lines meet EPIPE.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const signalled = performance.now();
  service.child.kill('SIGTERM');
  const timer = setTimeout(() => service.child.kill('SIGKILL'), GRACE_MS + 20_000);
  const code = await exited;
  clearTimeout(timer);
  return { code, ms: performance.now() - signalled, stderr };
}

describe('stopping with the stdout reader gone', function () {
  this.timeout(120_000);

  it('the all-in-one service (npm start): SIGTERM, and it exits within the grace', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'media-closed-stdout-'));
    const port = await freePort();
    const service = spawnService(allInOne, {
      PORT: String(port),
      DATA_DIR: dataDir,
      API_KEYS: 'closed-stdout-key-0123456789:acme',
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
      LOG_LEVEL: 'info',
    });
    try {
      await service.waitForLog((r) => r['msg'] === 'ingress.listening', 60_000);
      const { code, ms, stderr } = await closeReaderThenStop(service);
      console.log(`      all-in-one exited ${code} in ${ms.toFixed(0)} ms`);
      expect(code).to.equal(0);
      expect(ms).to.be.below(GRACE_MS);
      expect(stderr).to.match(/log output failed \(EPIPE\)|log lines dropped/);
    } finally {
      await service.kill();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  describe('a worker on Kafka', () => {
    let stack: KafkaStack;
    before(async () => {
      stack = await startKafkaStack({
        ingresses: 0,
        transcoders: 1,
        notifiers: 0,
        extraEnv: { SHUTDOWN_GRACE_MS: String(GRACE_MS) },
      });
    });
    after(async () => {
      await stack?.close();
    });

    it('a transcoder: SIGTERM, and it exits within the grace', async () => {
      const [worker] = stack.workers.transcoder;
      if (!worker) throw new Error('no transcoder');
      const { code, ms, stderr } = await closeReaderThenStop(worker);
      console.log(`      transcoder exited ${code} in ${ms.toFixed(0)} ms`);
      expect(code).to.equal(0);
      expect(ms).to.be.below(GRACE_MS);
      expect(stderr).to.match(/log output failed \(EPIPE\)|log lines dropped/);
    });
  });
});
