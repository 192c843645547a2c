import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { CloudEvent, Kafka } from 'cloudevents';
import { SHORT_CLIP } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';
import { fileCallbacks, H264_MP4, transcodeRequested } from '../support/job-requests.ts';
import {
  eventually,
  requireEnv,
  startStackWithClips,
  type KafkaStack,
} from '../support/kafka-stack.ts';
import { produceRaw, readTopic } from '../support/kafka-raw.ts';

const kafkaCtl = new URL('../../scripts/test-services/kafka.sh', import.meta.url).pathname;

/** Kafka's own console producer (a JVM, not Node), fed `lines` on stdin. */
function consoleProducer(
  brokers: string,
  topic: string,
  properties: string[],
  lines: string[],
): Promise<void> {
  const args = [
    'console-producer',
    '--bootstrap-server',
    brokers,
    '--topic',
    topic,
    ...properties.flatMap((p) => ['--property', p]),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [kafkaCtl, ...args], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`console producer exited ${code}: ${stderr.slice(-2000)}`)),
    );
    child.stdin.end(lines.map((l) => `${l}\n`).join(''));
  });
}

let brokers: string;
let files: TestServer;
let stack: KafkaStack;
let topic: string;
const jobData = (jobId: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  ...transcodeRequested(files, 'input.mp4', `${jobId}.mp4`, {
    jobId,
    orgId: 'org-k',
    transcode: { ...H264_MP4, width: 160 },
    callbacks: fileCallbacks(files),
  }),
  ...extra,
});
/** Follows a job to its callback and to GET /jobs/:id; returns both. */
async function followed(
  jobId: string,
  status: 'succeeded' | 'failed',
): Promise<{ callback: Record<string, unknown>; job: Record<string, unknown> }> {
  const callback = await files.waitForCallback((c) => c.body['jobId'] === jobId, 90_000);
  expect(callback.body['status'], JSON.stringify(callback.body)).to.equal(status);
  expect(callback.path).to.equal(status === 'succeeded' ? '/callbacks/ok' : '/callbacks/fail');
  await eventually(
    async () => (await stack.status(jobId))['status'] === status,
    20_000,
    `GET /jobs/${jobId} ${status}`,
  );
  return { callback: callback.body, job: await stack.status(jobId) };
}

describe('Kafka: jobs produced straight to the request topic as CloudEvents, by producers that are not ours', function () {
  this.timeout(240_000);

  before(async () => {
    brokers = requireEnv('TEST_KAFKA_BROKERS');
    ({ files, stack } = await startStackWithClips(
      { 'input.mp4': SHORT_CLIP },
      { transcoders: 1, notifiers: 1 },
    ));
    topic = `${stack.prefix}media.jobs.transcode.v1`;
  });
  after(async () => {
    await stack?.close();
    await files?.close();
  });

  describesCloudeventsSDKKafkaBinding();

  describesKafkaConsoleProducer();

  describesJobBreaksFieldRule();

  describesJobURLAddressPolicy();
});

function describesCloudeventsSDKKafkaBinding(): void {
  it('the cloudevents SDK, Kafka binding, structured mode', async () => {
    const jobId = randomUUID();
    const event = new CloudEvent({
      type: 'media.job.requested',
      source: 'urn:test:cloudevents-sdk',
      subject: jobId,
      partitionkey: jobId,
      data: jobData(jobId),
    });
    const message = Kafka.structured(event);
    await produceRaw(
      brokers,
      topic,
      String(message.key),
      message.value,
      definedHeaders(message.headers),
    );
    const { job } = await followed(jobId, 'succeeded');
    expect(job).to.include({ id: jobId, type: 'transcode' });
  });

  it('the cloudevents SDK, Kafka binding, binary mode (attributes in ce_ headers, the data as the value)', async () => {
    const jobId = randomUUID();
    const event = new CloudEvent({
      type: 'media.job.requested',
      source: 'urn:test:cloudevents-sdk',
      subject: jobId,
      partitionkey: jobId,
      datacontenttype: 'application/json',
      data: jobData(jobId),
    });
    const message = Kafka.binary(event);
    const headers = definedHeaders(message.headers);
    expect(headers).to.include({
      ce_type: 'media.job.requested',
      ce_subject: jobId,
      'content-type': 'application/json',
    });
    await produceRaw(brokers, topic, String(message.key), JSON.stringify(message.value), headers);
    await followed(jobId, 'succeeded');
  });
}

function describesKafkaConsoleProducer(): void {
  it("Kafka's own console producer: structured mode with only the required attributes, no content-type", async () => {
    const jobId = randomUUID();
    const event = {
      specversion: '1.0',
      id: randomUUID(),
      source: 'console-producer',
      type: 'media.job.requested',
      subject: jobId,
      data: jobData(jobId),
    };
    await consoleProducer(
      brokers,
      topic,
      ['parse.key=true'],
      [`${jobId}\t${JSON.stringify(event)}`],
    );
    await followed(jobId, 'succeeded');
  });

  it("Kafka's own console producer: binary mode, attributes in headers", async () => {
    const jobId = randomUUID();
    const headers = [
      'ce_specversion:1.0',
      `ce_id:${randomUUID()}`,
      'ce_source:console-producer',
      'ce_type:media.job.requested',
      'content-type:application/json',
    ].join(',');
    await consoleProducer(
      brokers,
      topic,
      ['parse.key=true', 'parse.headers=true'],
      [`${headers}\t${jobId}\t${JSON.stringify(jobData(jobId))}`],
    );
    await followed(jobId, 'succeeded');
  });
}

function describesJobBreaksFieldRule(): void {
  it('a job that breaks a field rule is failed with invalid_event naming the field, and its failure callback is sent', async () => {
    const jobId = randomUUID();
    const data = jobData(jobId, {
      transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '3000' },
    });
    await produceRaw(
      brokers,
      topic,
      jobId,
      JSON.stringify({
        specversion: '1.0',
        id: randomUUID(),
        source: 'test',
        type: 'media.job.requested',
        data,
      }),
    );
    const { callback, job } = await followed(jobId, 'failed');
    expect(callback['code']).to.equal('invalid_event');
    expect(job['error']).to.deep.include({ code: 'invalid_event' });
    expect(String((job['error'] as Record<string, unknown>)['message'])).to.contain(
      'data.transcode.bitrateKbps',
    );
  });
}

function describesJobURLAddressPolicy(): void {
  it('a job whose URL the address policy refuses is failed the same way; dead-lettered and counted by reason', async () => {
    const jobId = randomUUID();
    const data = jobData(jobId, {
      output: { url: 'http://169.254.169.254/latest/meta-data/out.mp4' },
    });
    await produceRaw(
      brokers,
      topic,
      jobId,
      JSON.stringify({
        specversion: '1.0',
        id: randomUUID(),
        source: 'test',
        type: 'media.job.requested',
        subject: jobId,
        data,
      }),
      { 'content-type': 'application/cloudevents+json' },
    );
    const { callback, job } = await followed(jobId, 'failed');
    expect(callback['message']).to.contain('data.output.url');
    expect((job['error'] as Record<string, unknown>)['code']).to.equal('invalid_event');
    const dead = await readTopic(brokers, `${stack.prefix}media.jobs.dead-letter.v1`, {
      minRecords: 2,
      timeoutMs: 20_000,
    });
    const mine = dead
      .map((d) => JSON.parse(d.value.toString()) as { key: string; reason: string; detail: string })
      .find((d) => d.key === jobId);
    expect(mine).to.deep.include({ reason: 'url_forbidden' });
    expect(mine?.detail).to.contain('data.output.url');
    const started = stack.workers.transcoder[0]?.logs.find(
      (r) => r['msg'] === 'transcoder.started',
    );
    const metrics = await (
      await fetch(`http://127.0.0.1:${String(started?.['metricsPort'])}/metrics`)
    ).text();
    expect(metrics).to.match(/^media_events_dead_lettered_total\{reason="url_forbidden"\} 1$/m);
    expect(metrics).to.match(/^media_events_dead_lettered_total\{reason="invalid_event"\} 1$/m);
  });
}

/** The SDK leaves unset attributes in its headers as undefined; Kafka headers carry strings. */
function definedHeaders(headers: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}
