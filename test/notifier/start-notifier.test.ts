import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import { topics, type EventBus, type Subscription } from '../../services/core/bus/event-bus.ts';
import type { CallbackStatus } from '../../services/core/contracts/types.generated.ts';
import { cancelRecord } from '../../services/core/status/job-cancels.ts';
import { ConfigError } from '../../services/core/config.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { webhookSecretResolver } from '../../services/notifier/start-notifier.ts';
import { freePort, spawnService } from '../support/spawn-service.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { codec, onceAcrossRestart, startTestNotifier, succeeded } from './notifier-fixture.ts';

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
    notifier = await startTestNotifier(bus, {
      concurrency: 16,
      maxInFlightPerHost: 2,
      timeoutMs: 20_000,
      policy: { backoffMs: 1000, backoffMaxMs: 60_000, horizonMs: 3600_000 },
    });
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

describe('notifier: one callback per terminal event, even when the event comes twice', function () {
  this.timeout(30_000);
  let bus: EventBus;
  let notifier: Subscription | undefined;
  let files: TestServer;
  const options = {
    concurrency: 4,
    maxInFlightPerHost: 2,
    timeoutMs: 5000,
    policy: { backoffMs: 100, backoffMaxMs: 1000, horizonMs: 60_000 },
  };

  beforeEach(async () => {
    bus = createEmbeddedBus({ path: ':memory:' });
    files = await startTestServer();
  });
  afterEach(async () => {
    await notifier?.close(0);
    await bus.close();
    await files.close();
  });

  it('the same event record twice (an outcome published again) makes one callback', async () => {
    notifier = await startTestNotifier(bus, options);
    const event = succeeded(`${files.url}/callbacks/twice`);
    await bus.publish([event]);
    await bus.publish([event]);
    const marker = succeeded(`${files.url}/callbacks/marker`);
    await bus.publish([marker]);
    await files.waitForCallback((c) => c.body['jobId'] === marker.key, 5000);
    await new Promise((r) => setTimeout(r, 300));
    expect(files.callbacks.filter((c) => c.body['jobId'] === event.key)).to.have.length(1);
  });

  it('an event whose callback the status topic shows delivered makes none (a restarted notifier)', async () => {
    const event = succeeded(`${files.url}/callbacks/done-before`);
    const now = new Date().toISOString();
    await bus.publish([
      {
        topic: topics.jobStatus,
        key: event.key,
        value: Buffer.from(
          JSON.stringify({
            id: event.key,
            orgId: 'org-a',
            type: 'transcode',
            status: 'succeeded',
            attempt: 1,
            createdAt: now,
            updatedAt: now,
            rev: 1,
            callback: {
              state: 'delivered',
              webhookId: `${event.key}:media.job.succeeded:1`,
              attempts: 1,
            },
          }),
        ),
      },
    ]);
    notifier = await startTestNotifier(bus, options);
    await bus.publish([event]);
    const marker = succeeded(`${files.url}/callbacks/marker`);
    await bus.publish([marker]);
    await files.waitForCallback((c) => c.body['jobId'] === marker.key, 5000);
    await new Promise((r) => setTimeout(r, 300));
    expect(files.callbacks.filter((c) => c.body['jobId'] === event.key)).to.deep.equal([]);
  });
});

describe('notifier: a cancel after the job ended stops its callback', function () {
  this.timeout(30_000);
  let bus: EventBus;
  let notifier: Subscription | undefined;
  let files: TestServer;

  beforeEach(async () => {
    bus = createEmbeddedBus({ path: ':memory:' });
    files = await startTestServer();
    notifier = await startTestNotifier(bus, {
      concurrency: 4,
      maxInFlightPerHost: 2,
      timeoutMs: 5000,
      policy: { backoffMs: 200, backoffMaxMs: 400, horizonMs: 3600_000 },
      random: () => 0.99,
    });
  });
  afterEach(async () => {
    await notifier?.close(0);
    await bus.close();
    await files.close();
  });

  const statuses = async (jobId: string): Promise<CallbackStatus[]> => {
    const seen: CallbackStatus[] = [];
    const sub = await bus.subscribe({
      group: `observer-${randomUUID()}`,
      topics: [topics.jobEvents],
      fromBeginning: true,
      handler: async (r) => {
        const d = codec.decode(r);
        if (d.ok && d.event.type === 'media.callback.status' && d.event.data.jobId === jobId)
          seen.push(d.event.data);
      },
    });
    await new Promise((r) => setTimeout(r, 300));
    await sub.close(0);
    return seen;
  };
  const failedJob = (url: string, finishedAt: Date) => {
    const jobId = randomUUID();
    const record = codec.encode(topics.jobEvents, 'media.job.failed', {
      jobId,
      kind: 'transcode',
      orgId: 'org-a',
      attempt: 1,
      finishedAt: finishedAt.toISOString(),
      callbacks: { failureUrl: url },
      error: { code: 'input_not_found', message: 'gone', retryable: false },
    });
    return { jobId, record };
  };
  const cancelAt = (jobId: string, at: Date) =>
    cancelRecord(codec, {
      jobId,
      kind: 'transcode',
      orgId: 'org-a',
      requestedAt: at.toISOString(),
    });

  it('a receiver that does not exist is no longer tried once the organisation cancels the ended job', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}/hook`; // nothing listens there
    const { jobId, record } = failedJob(nowhere, new Date());
    await bus.publish([record]);
    const end = Date.now() + 10_000;
    while (!(await statuses(jobId)).some((s) => s.state === 'retrying' && s.attempts >= 2))
      expect(Date.now(), 'two failed attempts').to.be.below(end);
    await bus.publish([cancelAt(jobId, new Date())]);
    let stopped: CallbackStatus | undefined;
    while (!(stopped = (await statuses(jobId)).find((s) => s.state === 'given_up')))
      expect(Date.now(), 'the callback stopped').to.be.below(end + 5000);
    expect(stopped.lastError).to.equal('stopped: the job was canceled after it ended');
    // No attempt after the stop.
    const attempts = (await statuses(jobId)).length;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await statuses(jobId)).length).to.equal(attempts);
  });

  it('the cancel that ended a job does not stop the callback that says so', async () => {
    const { jobId, record } = failedJob(`${files.url}/callbacks/canceled`, new Date());
    await bus.publish([cancelAt(jobId, new Date(Date.now() - 5000)), record]);
    const got = await files.waitForCallback((c) => c.body['jobId'] === jobId, 5000);
    expect(got.body['status']).to.equal('failed');
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

describe('notifier: once per terminal event across a restart (embedded bus on a file)', function () {
  this.timeout(60_000);
  let dir: string;
  let files: TestServer;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'notifier-once-'));
    files = await startTestServer();
  });
  afterEach(async () => {
    await files.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the same event or delivery record after a restart makes no second callback; a redelivery does', async () => {
    await onceAcrossRestart(() => createEmbeddedBus({ path: join(dir, 'bus.db') }), files, {
      concurrency: 4,
      maxInFlightPerHost: 2,
      timeoutMs: 5000,
      policy: { backoffMs: 100, backoffMaxMs: 1000, horizonMs: 60_000 },
    });
  });
});
