import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { transcodeBody } from '../support/job-requests.ts';
import { eventually, startKafkaStack, type KafkaStack } from '../support/kafka-stack.ts';

const SECRET = `whsec_${Buffer.alloc(32, 6).toString('base64')}`;

describe('Kafka: a pending callback survives a notifier restart', function () {
  this.timeout(180_000);
  let files: TestServer;
  let receiver: CallbackReceiver;
  let stack: KafkaStack;

  before(async () => {
    files = await startTestServer();
    receiver = await startCallbackReceiver();
    stack = await startKafkaStack({
      ingresses: 1,
      transcoders: 1,
      notifiers: 1,
      extraEnv: {
        WEBHOOK_SECRETS: `org-k:${SECRET}`,
        CALLBACK_BACKOFF_MS: '300',
        CALLBACK_BACKOFF_MAX_MS: '1000',
        CALLBACK_TIMEOUT_MS: '60000',
      },
    });
  });
  after(async () => {
    await stack?.close();
    await files?.close();
    await receiver?.down().catch(() => {});
  });

  it('notifier stopped mid-retry and started again: delivered, attempts continued, one webhook-id, signed', async () => {
    // 503 for attempt 1; attempt 2 is held open so it is in flight when the notifier stops;
    // after the restart 503 until attempt 3, then 200. Counting attempts, not time, keeps this
    // right whether the bus delays a retry or (before due times existed) delivers it at once.
    let stopped = false;
    receiver.answer = (a) => (a.attempt === 2 && !stopped ? 'hold' : a.attempt <= 3 ? 503 : 200);
    const ack = await stack.submit(
      '/transcode',
      transcodeBody(files, 'missing.mp4', 'out.mp4', { failureUrl: receiver.url }),
    );
    const id = String(ack.body['id']);
    await receiver.waitFor((a) => a.attempt === 2, 60_000);
    const first = stack.workers.notifier[0];
    expect(await first?.stop()).to.equal(0);
    stopped = true;
    const second = await stack.start('notifier');

    const delivered = await receiver.waitFor((a) => a.answered === 200, 60_000);
    const attempts = receiver.received.map((a) => a.attempt);
    expect(attempts.slice(0, 2)).to.deep.equal([1, 2]);
    expect(attempts, 'attempt numbers never go back').to.deep.equal(
      [...attempts].sort((a, b) => a - b),
    );
    expect(delivered.attempt).to.equal(4);
    expect(new Set(receiver.received.map((a) => a.webhookId))).to.deep.equal(
      new Set([`${id}:media.job.failed:1`]),
    );
    expect(new Webhook(SECRET).verify(delivered.raw, delivered.headers)).to.deep.include({
      jobId: id,
      status: 'failed',
    });
    // The receiver sees its own answer before the notifier has read it and logged the delivery.
    await second.waitForLog((r) => r['msg'] === 'callback.delivered' && r['jobId'] === id, 20_000);
    await eventually(
      async () =>
        ((await stack.status(id))['callback'] as { state?: string } | undefined)?.state ===
        'delivered',
      20_000,
      'status delivered',
    );
    expect((await stack.status(id))['callback']).to.deep.include({
      state: 'delivered',
      attempts: 4,
      lastStatus: 200,
    });
  });
});
