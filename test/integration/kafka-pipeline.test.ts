import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestServer } from '../support/file-server.ts';
import { fileCallbacks, transcodeBody } from '../support/job-requests.ts';
import {
  eventually,
  requireEnv,
  startStackWithClips,
  type KafkaStack,
} from '../support/kafka-stack.ts';
import { produceRaw, readTopic } from '../support/kafka-raw.ts';

const transcode = (
  files: TestServer,
  name: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> =>
  transcodeBody(files, 'input.mp4', name, { width: 160, ...fileCallbacks(files), ...extra });

let files: TestServer;
let stack: KafkaStack;
let brokers: string;

describe('Kafka: the services as separate processes on a real broker', function () {
  this.timeout(240_000);

  before(async () => {
    brokers = requireEnv('TEST_KAFKA_BROKERS');
    ({ files, stack } = await startStackWithClips(
      { 'input.mp4': { seconds: 2, width: 320, height: 240, audio: true } },
      { ingresses: 2, transcoders: 2, summarizers: 1, notifiers: 1 },
    ));
  });
  after(async () => {
    await stack?.close();
    await files?.close();
  });

  describesHTTPKafkaTranscoderEvents();

  describesWorkerProcessServesHealthz();

  describesPoisonMessageGoesDead();

  describesCredentialValueAPIKey();

  describesAnotherSystemCanProduce();
});

function describesHTTPKafkaTranscoderEvents(): void {
  it('HTTP → Kafka → transcoder → events → notifier → callback; status visible on another ingress', async () => {
    const ack = await stack.submit('/transcode', transcode(files, 'one.mp4'));
    expect(ack.status).to.equal(200);
    const id = String(ack.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    expect(callback.body['status']).to.equal('succeeded');
    await eventually(
      async () => (await stack.status(id, 1))['status'] === 'succeeded',
      20_000,
      'status on the second ingress',
    );
    const status = await stack.status(id, 1);
    expect(status).to.include({ id, type: 'transcode' });
    expect((status['result'] as Record<string, unknown>)['width']).to.equal(160);
  });

  it('two transcoders share the partitions; every job succeeds exactly once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const ack = await stack.submit('/transcode', transcode(files, `many-${i}.mp4`), i % 2);
      expect(ack.status).to.equal(200);
      ids.push(String(ack.body['id']));
    }
    await eventually(
      () => ids.every((id) => files.callbacks.some((c) => c.body['jobId'] === id)),
      180_000,
      'all callbacks',
    );
    await new Promise((r) => setTimeout(r, 1000));
    for (const id of ids) {
      const got = files.callbacks.filter((c) => c.body['jobId'] === id);
      expect(got, id).to.have.length(1);
      expect(got[0]?.body['status']).to.equal('succeeded');
    }
    const [a, b] = stack.workers.transcoder;
    const doneBy = (w: typeof a): number =>
      (w?.logs ?? []).filter(
        (r) => r['msg'] === 'job.succeeded' && ids.includes(String(r['jobId'])),
      ).length;
    expect(doneBy(a) + doneBy(b)).to.equal(ids.length);
    expect(doneBy(a), 'first transcoder did some').to.be.greaterThan(0);
    expect(doneBy(b), 'second transcoder did some').to.be.greaterThan(0);
  });
}

function describesWorkerProcessServesHealthz(): void {
  it('each worker process serves /healthz, /readyz and /metrics with its job counts', async () => {
    const worker = stack.workers.transcoder[0];
    const started = worker?.logs.find((r) => r['msg'] === 'transcoder.started');
    const port = Number(started?.['metricsPort']);
    expect(port).to.be.greaterThan(0);
    expect(await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()).to.deep.equal({
      status: 'ok',
    });
    expect(await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()).to.deep.equal({
      status: 'ready',
    });
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).to.match(/^media_job_attempts_total\{kind="transcode"\} [1-9]/m);
    expect(metrics).to.match(
      /^media_job_attempt_duration_seconds_count\{kind="transcode",format="mp4",outcome="succeeded"\} [1-9]/m,
    );
    // The input came from, and the output went to, the http(s) file server.
    expect(metrics).to.match(/^media_transfer_bytes_total\{direction="in",store="http"\} [1-9]/m);
    expect(metrics).to.match(/^media_transfer_bytes_total\{direction="out",store="http"\} [1-9]/m);
    expect(metrics).to.match(/^media_transfer_bytes_total\{direction="in",store="s3"\} 0$/m);
    const speed =
      /^media_ffmpeg_speed_ratio_sum\{kind="transcode",pass="encode"\} ([\d.e+-]+)$/m.exec(metrics);
    expect(Number(speed?.[1])).to.be.greaterThan(0);
    expect((await fetch(`http://127.0.0.1:${port}/nope`)).status).to.equal(404);
  });

  it('a summary job runs on the summarizer', async () => {
    const ack = await stack.submit('/summary/mp4', {
      inputUrl: `${files.url}/files/input.mp4`,
      outputUrl: `${files.url}/files/sum.mp4`,
      removeAudio: true,
      successUrl: `${files.url}/callbacks/ok`,
    });
    const id = String(ack.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    expect(callback.body['status']).to.equal('succeeded');
    expect((callback.body['result'] as Record<string, unknown>)['format']).to.equal('mp4');
  });
}

function describesPoisonMessageGoesDead(): void {
  it('a poison message goes to the dead-letter topic and the next good job still runs', async () => {
    await produceRaw(
      brokers,
      `${stack.prefix}media.jobs.transcode.v1`,
      'poison',
      '{"specversion":"1.0","oops":true}',
    );
    await produceRaw(
      brokers,
      `${stack.prefix}media.jobs.transcode.v1`,
      'poison2',
      Buffer.from([0xff, 0x00, 0x13]),
    );
    const ack = await stack.submit('/transcode', transcode(files, 'after-poison.mp4'));
    const id = String(ack.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    expect(callback.body['status']).to.equal('succeeded');
    const dead = await readTopic(brokers, `${stack.prefix}media.jobs.dead-letter.v1`, {
      minRecords: 2,
      timeoutMs: 20_000,
    });
    const reasons = dead.map(
      (d) => JSON.parse(d.value.toString()) as { reason: string; key: string; detail: string },
    );
    expect(reasons.map((r) => r.key).sort()).to.deep.equal(['poison', 'poison2']);
    expect(reasons.every((r) => r.reason === 'invalid_event')).to.equal(true);
    expect(dead[0]?.headers['dlq-reason']).to.equal('invalid_event');
  });
}

function describesCredentialValueAPIKey(): void {
  it('no credential value or API key is in the raw bytes of any topic', async () => {
    const secret = 'SECRET-access-key-value-4242';
    const ack = await stack.submit(
      '/transcode',
      transcode(files, 'never.mp4', {
        inputUrl: 's3://bucket-one/in.mp4',
        inputCreds: {
          region: 'us-east-1',
          accessKeyId: 'AKIA-KEY-ID-4242',
          secretAccessKey: secret,
        },
      }),
    );
    expect(ack.status).to.equal(200);
    const id = String(ack.body['id']);
    await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    for (const topic of [
      'media.jobs.transcode.v1',
      'media.jobs.events.v1',
      'media.jobs.dead-letter.v1',
    ]) {
      const records = await readTopic(brokers, `${stack.prefix}${topic}`, {
        minRecords: 1,
        timeoutMs: 10_000,
      });
      const raw = Buffer.concat(records.map((r) => r.value)).toString('latin1');
      for (const needle of [secret, 'AKIA-KEY-ID-4242', 'kafka-stack-key-0123456789'])
        expect(raw, `${needle} in ${topic}`).not.to.contain(needle);
    }
    const requests = await readTopic(brokers, `${stack.prefix}media.jobs.transcode.v1`, {
      minRecords: 1,
      timeoutMs: 10_000,
    });
    const mine = requests.find((r) => r.key === id);
    expect(JSON.parse(mine?.value.toString() ?? '{}').data.input.creds.alg).to.equal('A256GCM');
  });
}

function describesAnotherSystemCanProduce(): void {
  it('another system can produce a job straight to Kafka (examples/produce-transcode-job.ts)', async () => {
    const example = new URL('../../examples/produce-transcode-job.ts', import.meta.url).pathname;
    const { stdout } = await promisify(execFile)(process.execPath, [example], {
      env: {
        PATH: process.env['PATH'] ?? '',
        KAFKA_BROKERS: brokers,
        TOPIC_PREFIX: stack.prefix,
        ORG_ID: 'org-k',
        INPUT_URL: `${files.url}/files/input.mp4`,
        OUTPUT_URL: `${files.url}/files/direct.webm`,
        ENCODER: 'vp8',
        CONTAINER: 'webm',
        SUCCESS_URL: `${files.url}/callbacks/ok`,
      },
    });
    const id = stdout.trim();
    expect(id).to.match(/^[0-9a-f-]{36}$/);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    expect(callback.body['status']).to.equal('succeeded');
    await eventually(
      async () => (await stack.status(id))['status'] === 'succeeded',
      20_000,
      'status succeeded',
    );
  });
}
