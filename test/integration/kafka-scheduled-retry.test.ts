import { expect } from 'chai';
import { createReadStream } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { generateClip } from '../support/generate-clip.ts';
import { H264_MP4 } from '../support/job-requests.ts';
import {
  eventually,
  requireEnv,
  startKafkaStack,
  type KafkaStack,
} from '../support/kafka-stack.ts';

const RETRY_BACKOFF_MS = 20_000;

/** Serves the clip, answering 503 to the first request of each path (a flaky input server). */
async function startFlakyInput(clip: string): Promise<{ url: string; close(): Promise<void> }> {
  const seen = new Set<string>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    if (!seen.has(path)) {
      seen.add(path);
      res.writeHead(503).end('try later');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    pipeline(createReadStream(clip), res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('Kafka: a scheduled retry holds no worker slot (transcoder as its own process)', function () {
  this.timeout(180_000);
  let files: TestServer;
  let flaky: { url: string; close(): Promise<void> };
  let stack: KafkaStack;

  before(async () => {
    requireEnv('TEST_KAFKA_BROKERS');
    files = await startTestServer();
    await generateClip(join(files.dir, 'input.mp4'), { seconds: 1, width: 160, height: 120 });
    flaky = await startFlakyInput(join(files.dir, 'input.mp4'));
    const fixedRandom = new URL('../support/fixed-random.ts', import.meta.url).pathname;
    stack = await startKafkaStack({
      ingresses: 1,
      transcoders: 1,
      notifiers: 0,
      extraEnv: {
        WORKER_CONCURRENCY: '1',
        RETRY_BACKOFF_MS: String(RETRY_BACKOFF_MS),
        NODE_OPTIONS: `--import=${fixedRandom}`,
      },
    });
  });
  after(async () => {
    await stack?.close();
    await flaky?.close();
    await files?.close();
  });

  const submit = async (inputUrl: string, output: string): Promise<string> => {
    const ack = await stack.submit('/transcode', {
      inputUrl,
      outputUrl: `${files.url}/files/${output}`,
      ...H264_MP4,
    });
    expect(ack.status, JSON.stringify(ack.body)).to.equal(200);
    return String(ack.body['id']);
  };

  it('job B, published after job A was scheduled for a retry 20 s out, finishes first; A then succeeds on attempt 2', async () => {
    const transcoder = stack.workers.transcoder[0];
    if (!transcoder) throw new Error('no transcoder');
    const a = await submit(`${flaky.url}/a.mp4`, 'a.mp4');
    const scheduled = await transcoder.waitForLog(
      (r) => r['msg'] === 'job.retry_scheduled' && r['jobId'] === a,
      60_000,
    );
    const retryDueAt = Date.parse(String(scheduled['time'])) + Number(scheduled['delayMs']);
    expect(Number(scheduled['delayMs'])).to.be.greaterThan(RETRY_BACKOFF_MS - 100);

    const bSubmitted = Date.now();
    const b = await submit(`${files.url}/files/input.mp4`, 'b.mp4');
    await eventually(
      async () => (await stack.status(b))['status'] === 'succeeded',
      30_000,
      'job B to succeed',
    );
    const bDone = Date.now();
    expect(bDone - bSubmitted, 'B finished in a few seconds').to.be.lessThan(10_000);
    expect(bDone, 'B finished before A was due').to.be.lessThan(retryDueAt - 5000);
    expect(
      transcoder.logs.some(
        (r) => r['msg'] === 'job.started' && r['jobId'] === a && r['attempt'] === 2,
      ),
    ).to.equal(false);

    await eventually(
      async () => (await stack.status(a))['status'] === 'succeeded',
      60_000,
      'job A to succeed',
    );
    const status = await stack.status(a);
    expect(status['attempt']).to.equal(2);
    const started2 = transcoder.logs.find(
      (r) => r['msg'] === 'job.started' && r['jobId'] === a && r['attempt'] === 2,
    );
    expect(Date.parse(String(started2?.['time']))).to.be.at.least(retryDueAt - 1000);
  });
});
