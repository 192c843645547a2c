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

  it('a second signal after the first second exits at once, whatever the stop waits for', async () => {
    const service = spawnService(fixture, { LOG_LEVEL: 'info', STOP_MODE: 'hang' });
    await service.waitForLog((r) => r['msg'] === 'slow.started', 10_000);
    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const second = Date.now();
    service.child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) =>
      service.child.once('close', resolve),
    );
    expect(Date.now() - second).to.be.below(1000);
    expect(code).to.equal(1);
    expect(messages(service.logs)).to.include('service.stop_forced');
  });

  it('a stop that spins the main thread (no timer of its own can run) is ended by the watchdog thread', async () => {
    const service = spawnService(fixture, { LOG_LEVEL: 'info', STOP_MODE: 'spin' });
    await service.waitForLog((r) => r['msg'] === 'slow.started', 10_000);
    let stderr = '';
    service.child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const signalled = Date.now();
    service.child.kill('SIGTERM');
    const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
      service.child.once('exit', (_code, s) => resolve(s)),
    );
    // STOP_STALL_MS (5 s) of no turn of the event loop, checked every 250 ms.
    expect(Date.now() - signalled).to.be.within(5000, 8000);
    expect(signal).to.equal('SIGKILL');
    expect(stderr).to.contain('stopped turning its event loop');
  });
});
