import { expect } from 'chai';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import type { EventBus, Subscription } from '../../services/core/bus/event-bus.ts';
import { createGuardedHttp } from '../../services/core/net/guarded-http.ts';
import { systemClock } from '../../services/core/time.ts';
import { startNotifier } from '../../services/notifier/start-notifier.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { codec, log, newMetrics, succeeded } from './notifier-fixture.ts';

describe('notifier on the embedded bus', function () {
  this.timeout(30_000);
  let bus: EventBus;
  let notifier: Subscription | undefined;
  let files: TestServer;
  let blackHole: Server;
  const sockets = new Set<Socket>();

  beforeEach(async () => {
    bus = createEmbeddedBus({ path: ':memory:' });
    files = await startTestServer();
    // Accepts connections and never answers: the receiver that used to stall every callback.
    blackHole = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
  });
  afterEach(async () => {
    await notifier?.close(0);
    await bus.close();
    for (const s of sockets) s.destroy();
    blackHole.close();
    await files.close();
  });

  it('a black-hole receiver costs only its own callbacks: a normal one arrives within seconds', async () => {
    notifier = await startNotifier(
      {
        bus,
        codec,
        http: createGuardedHttp({ allowPrivateNetworks: true }),
        log,
        metrics: newMetrics(),
        clock: systemClock,
      },
      {
        group: 'notifier',
        concurrency: 16,
        maxInFlightPerHost: 2,
        timeoutMs: 20_000,
        policy: { backoffMs: 1000, backoffMaxMs: 60_000, horizonMs: 3600_000 },
        secretFor: () => undefined,
      },
    );
    const hole = `http://127.0.0.1:${(blackHole.address() as AddressInfo).port}/hook`;
    await bus.publish([succeeded(hole), succeeded(hole), succeeded(hole), succeeded(hole)]);
    // Let the black-hole callbacks take their slots first.
    await new Promise((r) => setTimeout(r, 300));
    const started = performance.now();
    const normal = succeeded(`${files.url}/callbacks/normal`);
    await bus.publish([normal]);
    const jobId = normal.key;
    const got = await files.waitForCallback((c) => c.body['jobId'] === jobId, 5000);
    expect(performance.now() - started).to.be.below(3000);
    expect(got.headers['webhook-id']).to.equal(`${jobId}:media.job.succeeded:1`);
    expect(sockets.size, 'black-hole connections held at once').to.be.at.most(2);
  });
});
