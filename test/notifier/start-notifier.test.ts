import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import type { EventBus, Subscription } from '../../services/core/bus/event-bus.ts';
import { createGuardedHttp } from '../../services/core/net/guarded-http.ts';
import { systemClock } from '../../services/core/time.ts';
import { ConfigError } from '../../services/core/config.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { startNotifier, webhookSecretResolver } from '../../services/notifier/start-notifier.ts';
import { freePort, spawnService } from '../support/spawn-service.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { codec, log, newMetrics, succeeded } from './notifier-fixture.ts';

const root = new URL('../../', import.meta.url).pathname;

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

describe('notifier: a signing secret, or an explicit choice of unsigned callbacks', function () {
  this.timeout(60_000);
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

  it('without WEBHOOK_SECRETS and without ALLOW_UNSIGNED_CALLBACKS, the resolver refuses', () => {
    expect(() => webhookSecretResolver(new Map(), undefined, silentLogger)).to.throw(
      ConfigError,
      /WEBHOOK_SECRETS is required.*ALLOW_UNSIGNED_CALLBACKS=true/,
    );
    const allowed = webhookSecretResolver(new Map(), undefined, silentLogger, {
      allowUnsigned: true,
    });
    expect(allowed('org-a')).to.equal(undefined);
    expect(webhookSecretResolver(new Map(), secret, silentLogger)('org-a')).to.equal(secret);
    const perOrg = webhookSecretResolver(new Map([['org-a', secret]]), undefined, silentLogger);
    expect(perOrg('org-a')).to.equal(secret);
  });

  it('the notifier process exits 2 at start without a secret, and says how to choose', async () => {
    const service = spawnService(join(root, 'services/notifier/main.ts'), {
      KAFKA_BROKERS: '127.0.0.1:1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
    });
    let stderr = '';
    service.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) =>
      service.child.once('exit', (c) => resolve(c)),
    );
    expect(code).to.equal(2);
    expect(stderr).to.match(/^configuration error: WEBHOOK_SECRETS is required/);
    expect(stderr).to.include('ALLOW_UNSIGNED_CALLBACKS=true');
  });

  it('all-in-one mode signs with its first-run secret, and its log line names the file', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'notifier-first-run-'));
    const service = spawnService(join(root, 'services/all-in-one/main.ts'), {
      PORT: String(await freePort()),
      METRICS_PORT: '0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
    });
    try {
      const line = await service.waitForLog(
        (r) => r['msg'] === 'callback.first_run_secret',
        30_000,
      );
      expect(line['file']).to.equal(join(dataDir, 'webhook-secret'));
      expect(await readFile(join(dataDir, 'webhook-secret'), 'utf8')).to.match(/^whsec_/);
    } finally {
      await service.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
