import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { postJson, transcodeBody } from '../support/job-requests.ts';
import { eventually } from '../support/kafka-stack.ts';
import { freePort, spawnService, type SpawnedService } from '../support/spawn-service.ts';

const KEY = 'callback-durability-key-0123';
const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const main = new URL('../../services/all-in-one/main.ts', import.meta.url).pathname;

let files: TestServer;
let receiver: CallbackReceiver;
let dataDir: string;
let service: SpawnedService | undefined;

describe('all-in-one as a process: a pending callback survives a restart', function () {
  this.timeout(240_000);

  before(async () => {
    files = await startTestServer();
    receiver = await startCallbackReceiver();
    dataDir = await mkdtemp(join(tmpdir(), 'media-callbacks-'));
  });
  after(async () => {
    await service?.kill();
    await files.close();
    await receiver.down().catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
  });

  describesReceiverAnswering503Down();
});

function describesReceiverAnswering503Down(): void {
  it('receiver answering 503, then down for a minute across a restart: delivered afterwards, attempts continued, one webhook-id, signed', async () => {
    const port = await freePort();
    const env = serviceEnv(port);
    const status = async (id: string) =>
      (await (
        await fetch(`http://127.0.0.1:${port}/jobs/${id}`, { headers: { 'x-api-key': KEY } })
      ).json()) as { callback?: { state: string; attempts: number; lastError?: string } };
    // Attempt 1 is refused with 503; attempt 2 is held open so it is in flight when the process stops.
    receiver.answer = (a) => (a.attempt >= 2 ? 'hold' : 503);
    service = spawnService(main, env);
    await service.waitForLog((r) => r['msg'] === 'ingress.listening', 20_000);
    const res = await postJson(
      `http://127.0.0.1:${port}/transcode`,
      transcodeBody(files, 'missing.mp4', 'out.mp4', { apiKey: KEY, failureUrl: receiver.url }),
    );
    const id = String(res.body['id']);
    await receiver.waitFor((a) => a.attempt === 2, 30_000);
    expect(await service.stop()).to.equal(0);

    // Down for a minute, across the restart: connection refused.
    await receiver.down();
    const downAt = Date.now();
    receiver.answer = () => 200;
    service = spawnService(main, env);
    await service.waitForLog((r) => r['msg'] === 'ingress.listening', 20_000);
    let downAttempts = 0;
    await eventually(
      async () => {
        const cb = (await status(id)).callback;
        downAttempts = cb?.attempts ?? 0;
        return (
          cb?.state === 'retrying' &&
          cb.lastError === 'connection refused' &&
          downAttempts >= 3 &&
          Date.now() - downAt >= 60_000
        );
      },
      120_000,
      'refused attempts after the restart',
    );
    await receiver.up();

    const delivered = await receiver.waitFor((a) => a.answered === 200, 30_000);
    const attempts = receiver.received.map((a) => a.attempt);
    expect(attempts[0]).to.equal(1);
    expect(attempts, 'attempt numbers never go back').to.deep.equal(
      [...attempts].sort((a, b) => a - b),
    );
    expect(
      delivered.attempt,
      'the count continued through the restart and the refused attempts',
    ).to.be.greaterThan(downAttempts);
    expect(new Set(receiver.received.map((a) => a.webhookId))).to.deep.equal(
      new Set([`${id}:media.job.failed:1`]),
    );
    expect(new Webhook(SECRET).verify(delivered.raw, delivered.headers)).to.deep.include({
      jobId: id,
      status: 'failed',
      code: 'input_not_found',
    });
    await eventually(
      async () => (await status(id)).callback?.state === 'delivered',
      10_000,
      'status delivered',
    );
    expect((await status(id)).callback).to.deep.include({
      state: 'delivered',
      attempts: delivered.attempt,
      lastStatus: 200,
    });
    expect(await service.stop()).to.equal(0);
  });
}

/** The all-in-one's settings: fast callback retries, a short shutdown grace. */
function serviceEnv(port: number): Record<string, string> {
  return {
    PORT: String(port),
    API_KEYS: `${KEY}:org-r`,
    WEBHOOK_SECRETS: `org-r:${SECRET}`,
    ALLOW_PRIVATE_NETWORKS: 'true',
    DATA_DIR: dataDir,
    CALLBACK_BACKOFF_MS: '500',
    CALLBACK_BACKOFF_MAX_MS: '2000',
    CALLBACK_TIMEOUT_MS: '60000',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'info',
  };
}
