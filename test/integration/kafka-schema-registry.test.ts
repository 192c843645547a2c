import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { SHORT_CLIP } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';
import { transcodeBody, transcodeRequested } from '../support/job-requests.ts';
import {
  eventually,
  requireEnv,
  startStackWithClips,
  type KafkaStack,
} from '../support/kafka-stack.ts';
import { produceRaw, readTopic } from '../support/kafka-raw.ts';

let brokers: string;
let registryUrl: string;
let files: TestServer;
let stack: KafkaStack;
const body = (name: string): Record<string, unknown> =>
  transcodeBody(files, 'input.mp4', name, {
    encoder: 'vp9',
    successUrl: `${files.url}/callbacks/ok`,
  });

describe('Kafka with a Confluent-compatible schema registry (Apicurio)', function () {
  this.timeout(240_000);

  before(async () => {
    brokers = requireEnv('TEST_KAFKA_BROKERS');
    registryUrl = requireEnv('TEST_SCHEMA_REGISTRY_URL');
    ({ files, stack } = await startStackWithClips(
      { 'input.mp4': SHORT_CLIP },
      { transcoders: 1, notifiers: 1, extraEnv: { SCHEMA_REGISTRY_URL: registryUrl } },
    ));
  });
  after(async () => {
    await stack?.close();
    await files?.close();
  });

  describesJobsRunEndToEnd();

  describesConsumersStillReadPlain();
});

function describesJobsRunEndToEnd(): void {
  it('jobs run end to end with registry-framed events, and the schema is registered per topic', async () => {
    const ack = await stack.submit('/transcode', body('framed.mp4'));
    expect(ack.status).to.equal(200);
    const id = String(ack.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    expect(callback.body['status']).to.equal('succeeded');
    const records = await readTopic(brokers, `${stack.prefix}media.jobs.transcode.v1`, {
      minRecords: 1,
      timeoutMs: 15_000,
    });
    const mine = records.find((r) => r.key === id);
    expect(mine?.value[0], 'magic byte').to.equal(0);
    const schemaId = mine?.value.readInt32BE(1);
    const subjects = (await (await fetch(`${registryUrl}/subjects`)).json()) as string[];
    expect(subjects).to.include(`${stack.prefix}media.jobs.transcode.v1-value`);
    expect(subjects).to.include(`${stack.prefix}media.jobs.events.v1-value`);
    const schema = (await (await fetch(`${registryUrl}/schemas/ids/${schemaId}`)).json()) as {
      schemaType?: string;
      schema: string;
    };
    expect(schema.schemaType).to.equal('JSON');
    expect(JSON.parse(schema.schema)).to.have.nested.property('properties.specversion');
  });

  it('a stock serializer with auto-registration off finds the shipped schema file by lookup, under every subject', async () => {
    // What the service registers must be byte-for-byte the file it ships (README): a Confluent
    // serializer that does not own the schema looks its text up under <topic>-value.
    const shipped = await readFile(
      new URL('../../schemas/events/envelope.v1.schema.json', import.meta.url),
      'utf8',
    );
    const subjects = ((await (await fetch(`${registryUrl}/subjects`)).json()) as string[]).filter(
      (s) => s.startsWith(stack.prefix),
    );
    expect(subjects).to.have.length.greaterThanOrEqual(2);
    for (const subject of subjects) {
      const res = await fetch(`${registryUrl}/subjects/${encodeURIComponent(subject)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
        body: JSON.stringify({ schemaType: 'JSON', schema: shipped }),
      });
      expect(res.status, `${subject}: ${await res.clone().text()}`).to.equal(200);
      const found = (await res.json()) as { id: number; schema: string };
      expect(found.schema).to.equal(shipped);
    }
  });
}

function describesConsumersStillReadPlain(): void {
  it('consumers still read plain JSON events produced by systems that do not use the registry', async () => {
    const jobId = crypto.randomUUID();
    const envelope = {
      specversion: '1.0',
      id: `${jobId}:media.job.requested:1`,
      type: 'media.job.requested',
      source: 'test/plain',
      time: new Date().toISOString(),
      subject: jobId,
      dataschema: 'https://media-service.dev/schemas/events/job-requested.v1.schema.json',
      datacontenttype: 'application/json',
      data: transcodeRequested(files, 'input.mp4', 'plain.webm', {
        jobId,
        orgId: 'org-k',
        transcode: { encoder: 'vp8', container: 'webm', bitrateKbps: '1000' },
        callbacks: { successUrl: `${files.url}/callbacks/ok` },
      }),
    };
    await produceRaw(
      brokers,
      `${stack.prefix}media.jobs.transcode.v1`,
      jobId,
      JSON.stringify(envelope),
    );
    const callback = await files.waitForCallback((c) => c.body['jobId'] === jobId, 90_000);
    expect(callback.body['status']).to.equal('succeeded');
    await eventually(
      async () => (await stack.status(jobId))['status'] === 'succeeded',
      20_000,
      'status',
    );
  });

  it('a framed value with an unknown schema id is dead-lettered, not retried forever', async () => {
    const framed = Buffer.concat([
      Buffer.from([0, 0x7f, 0xff, 0xff, 0x00]),
      Buffer.from('{"x":1}'),
    ]);
    await produceRaw(brokers, `${stack.prefix}media.jobs.transcode.v1`, 'unknown-schema', framed);
    const dead = await readTopic(brokers, `${stack.prefix}media.jobs.dead-letter.v1`, {
      minRecords: 1,
      timeoutMs: 30_000,
    });
    expect(dead.map((d) => d.key)).to.include('unknown-schema');
  });
}
