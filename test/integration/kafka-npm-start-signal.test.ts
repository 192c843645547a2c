import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEnv } from '../support/kafka-stack.ts';
import { spawnCommand } from '../support/spawn-service.ts';

const root = new URL('../..', import.meta.url).pathname;
const GRACE_MS = 5000;

/** The pids of the processes whose parent is `pid` (/proc/<pid>/task/<pid>/children). */
async function childrenOf(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text.trim().split(/\s+/).filter(Boolean).map(Number);
}

// A supervisor that runs the documented `npm run start:transcoder` (docs/kafka.md) signals npm's
// own pid. npm forwards the signal to the script's process; with `exec` in the script that is the
// service itself, not a `sh -c` that dies and leaves the service orphaned (issue 28).
describe('Kafka: SIGTERM to `npm run start:transcoder` reaches the service', function () {
  this.timeout(120_000);
  let dataDir: string;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'media-npm-signal-'));
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('npm’s pid signalled: the transcoder drains and exits, and no process of the group is left', async () => {
    const npm = spawnCommand(
      'npm',
      ['run', 'start:transcoder'],
      {
        HOME: process.env['HOME'] ?? '/root',
        KAFKA_BROKERS: requireEnv('TEST_KAFKA_BROKERS'),
        KAFKA_TOPIC_PREFIX: `t${randomUUID().slice(0, 8)}.`,
        KAFKA_PARTITIONS: '2',
        KAFKA_SESSION_TIMEOUT_MS: '6000',
        CREDENTIALS_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        DATA_DIR: dataDir,
        SHUTDOWN_GRACE_MS: String(GRACE_MS),
        LOG_LEVEL: 'info',
      },
      { ownGroup: true, cwd: root },
    );
    try {
      await npm.waitForLog((r) => r['msg'] === 'transcoder.started', 60_000);
      const npmPid = npm.child.pid ?? 0;
      const [service] = await childrenOf(npmPid);
      expect(service, 'npm runs the service as its own child').to.be.a('number');
      expect(await childrenOf(service ?? 0), 'no shell between npm and node').to.deep.equal([]);

      const signalled = performance.now();
      npm.child.kill('SIGTERM');
      const gone = await npm.groupGone(GRACE_MS + 10_000);
      const ms = performance.now() - signalled;
      console.log(`      npm and the transcoder gone in ${ms.toFixed(0)} ms`);
      expect(gone, 'npm and the transcoder both ended').to.equal(true);
      expect(ms).to.be.below(GRACE_MS);
      expect(npm.child.exitCode, 'npm exits with the service’s code').to.equal(0);
      const msgs = npm.logs.map((r) => r['msg']);
      expect(msgs).to.include.members(['service.stopping', 'worker.drained']);
      const stopping = npm.logs.find((r) => r['msg'] === 'service.stopping');
      expect(stopping?.['signal']).to.equal('SIGTERM');
    } finally {
      await npm.kill();
    }
  });
});
