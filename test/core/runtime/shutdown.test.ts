import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { STOP_WIND_DOWN_MS } from '../../../services/core/runtime/on-shutdown.ts';
import { spawnService, type SpawnedService } from '../../support/spawn-service.ts';

const fixture = fileURLToPath(
  new URL('../../support/fixtures/slow-start-service.ts', import.meta.url),
);
const deadlineFixture = fileURLToPath(
  new URL('../../support/fixtures/stop-deadline-service.ts', import.meta.url),
);
const messages = (logs: Record<string, unknown>[]): unknown[] => logs.map((r) => r['msg']);

/**
 * SIGTERM, then the exit code and how long after the signal the process exited, ms. A process
 * still running `killAfterMs` after the signal is killed (code null), so that a stop deadline
 * that does not work fails the test instead of leaving the process behind.
 */
async function terminate(
  service: SpawnedService,
  killAfterMs = 10_000,
): Promise<{ code: number | null; ms: number }> {
  const exited = new Promise<number | null>((resolve) => service.child.once('exit', resolve));
  const signalled = performance.now();
  service.child.kill('SIGTERM');
  const kill = setTimeout(() => service.child.kill('SIGKILL'), killAfterMs);
  const code = await exited;
  clearTimeout(kill);
  return { code, ms: performance.now() - signalled };
}

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

describe('runtime: the stop deadline', function () {
  this.timeout(20_000);

  it('is SHUTDOWN_GRACE_MS + 55 s in a service (the service.stopping line says so)', async () => {
    const service = spawnService(fixture, { LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '1234' });
    await service.waitForLog((r) => r['msg'] === 'slow.started', 10_000);
    expect((await terminate(service)).code).to.equal(0);
    const stopping = service.logs.find((r) => r['msg'] === 'service.stopping');
    expect(stopping?.['deadlineMs']).to.equal(1234 + STOP_WIND_DOWN_MS);
    expect(STOP_WIND_DOWN_MS).to.equal(55_000);
  });

  // A short deadline (the 55 s made injectable), which must be grace + wind-down: 1000 + 1500.
  // Timers never fire early, so the lower bound holds on any load; a deadline of the grace
  // alone (1000) or of the wind-down alone (1500) is 900 ms or more under it.
  const shortDeadline = { GRACE_MS: '1000', WIND_DOWN_MS: '1500' };
  const deadlineMs = 2500;

  it('a stop still running at grace + wind-down is cut short: exit 1 with service.stop_timed_out', async () => {
    const service = spawnService(deadlineFixture, { ...shortDeadline, STOP_MS: 'never' });
    await service.waitForLog((r) => r['msg'] === 'deadline.started', 10_000);
    const { code, ms } = await terminate(service, deadlineMs + 5000);
    expect(code, 'exit code (null: still running 5 s after the deadline, killed)').to.equal(1);
    const timedOut = service.logs.find((r) => r['msg'] === 'service.stop_timed_out');
    expect(timedOut, JSON.stringify(service.logs)).to.deep.include({
      level: 'error',
      afterMs: deadlineMs,
    });
    expect(messages(service.logs)).not.to.include('deadline.stopped');
    // Not before the deadline (nor 5 s after it: killed above, whatever the load).
    expect(ms).to.be.at.least(deadlineMs - 100);
  });

  it('a stop that ends past the grace but before the deadline exits 0, not cut short', async () => {
    const service = spawnService(deadlineFixture, { ...shortDeadline, STOP_MS: '1500' });
    await service.waitForLog((r) => r['msg'] === 'deadline.started', 10_000);
    const { code, ms } = await terminate(service);
    expect(code).to.equal(0);
    expect(messages(service.logs)).to.include('deadline.stopped');
    expect(messages(service.logs)).not.to.include('service.stop_timed_out');
    expect(ms).to.be.at.least(1500 - 100);
  });
});
