import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { spawnService } from '../../support/spawn-service.ts';

const fixture = fileURLToPath(
  new URL('../../support/fixtures/slow-start-service.ts', import.meta.url),
);
const messages = (logs: Record<string, unknown>[]): unknown[] => logs.map((r) => r['msg']);

describe('runtime: stopping on SIGTERM', function () {
  this.timeout(20_000);

  it('a signal during start-up stops the service cleanly once it has started (not the default abrupt exit)', async () => {
    const service = spawnService(fixture, { LOG_LEVEL: 'info' });
    await service.waitForLog((r) => r['msg'] === 'slow.starting', 10_000);
    service.child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) =>
      service.child.once('close', resolve),
    );
    expect(code).to.equal(0);
    expect(messages(service.logs)).to.include.members([
      'service.stopping',
      'slow.started',
      'slow.stopped',
    ]);
  });

  it('the same signal twice in quick succession (npm start forwards it) is one graceful stop', async () => {
    const service = spawnService(fixture, { LOG_LEVEL: 'info' });
    await service.waitForLog((r) => r['msg'] === 'slow.started', 10_000);
    service.child.kill('SIGINT');
    service.child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) =>
      service.child.once('close', resolve),
    );
    expect(code).to.equal(0);
    expect(messages(service.logs)).to.include('slow.stopped');
    expect(messages(service.logs)).not.to.include('service.stop_forced');
  });
});
