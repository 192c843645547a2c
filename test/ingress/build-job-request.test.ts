import { expect } from 'chai';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import request from 'supertest';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import type { JobKind } from '../../services/core/worker/job-handler.ts';
import {
  defaultSchemasDir,
  loadContracts,
  type Contracts,
} from '../../services/core/contracts/load-contracts.ts';
import type { JobRequested } from '../../services/core/contracts/types.generated.ts';
import { createEventCodec } from '../../services/core/events/event-codec.ts';
import { createAddressPolicy } from '../../services/core/net/address-policy.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createMetrics } from '../../services/core/observability/metrics.ts';
import { systemClock } from '../../services/core/time.ts';
import { startJobWorker } from '../../services/core/worker/run-job-worker.ts';
import { jobResult } from '../support/job-requests.ts';
import { KEY_A, makeIngress, sealingKey, validSummary, validTranscode } from './ingress-fixture.ts';

/** A field no spec has, added to each kind's spec schema in a copy of schemas/. */
const NEW_FIELD = { audioChannels: { type: 'integer', minimum: 1, maximum: 8 } };

/** Where each kind's spec schema lists its fields (a summary's format is the path's, not the body's). */
const specFields: Record<JobKind, { file: string; at: string[] }> = {
  transcode: { file: 'events/transcode-spec.v1.schema.json', at: ['properties'] },
  summary: { file: 'events/summary-spec.v1.schema.json', at: ['$defs', 'options', 'properties'] },
  stream: { file: 'events/stream-spec.v1.schema.json', at: ['properties'] },
};

/** A copy of schemas/ whose three spec schemas have one more field, and nothing else edited. */
async function schemasWithNewField(dir: string): Promise<Contracts> {
  await cp(defaultSchemasDir, dir, { recursive: true });
  for (const { file, at } of Object.values(specFields)) {
    const path = join(dir, file);
    const schema = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    const fields = at.reduce<Record<string, unknown>>(
      (node, key) => node[key] as Record<string, unknown>,
      schema,
    );
    Object.assign(fields, NEW_FIELD);
    await writeFile(path, JSON.stringify(schema));
  }
  return loadContracts(dir);
}

/** The ingress and a worker loop of `kind` on one embedded bus; the handler keeps its jobs. */
async function ingressAndWorker(contracts: Contracts, kind: JobKind) {
  const bus = createEmbeddedBus({ path: ':memory:' });
  const handled: JobRequested[] = [];
  const ingress = await makeIngress({ bus, contracts });
  await startJobWorker(
    {
      bus,
      codec: createEventCodec(contracts, 'test'),
      log: silentLogger,
      metrics: createMetrics(new Registry(), { defaultMetrics: false }),
      clock: systemClock,
      sealingKeys: [sealingKey],
    },
    {
      kind,
      group: `w-${kind}`,
      concurrency: 1,
      maxAttempts: 1,
      retryBackoffMs: 10,
      jobTimeoutMs: 2000,
      progressIntervalMs: 0,
      admission: { addressPolicy: createAddressPolicy({ allowPrivateNetworks: false }), contracts },
      handler: async (job) => {
        handled.push(job);
        return jobResult(job.output.url);
      },
    },
  );
  const until = async (check: () => boolean): Promise<void> => {
    for (const end = Date.now() + 5000; !check(); await new Promise((r) => setTimeout(r, 10)))
      if (Date.now() > end) throw new Error(`no ${kind} job reached the handler`);
  };
  return { server: ingress.server, handled, until, close: () => bus.close() };
}

describe('one spec schema per job kind: a field added to it reaches the handler', function () {
  this.timeout(20_000);
  let dir = '';
  let contracts: Contracts;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'schemas-'));
    contracts = await schemasWithNewField(dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const submissions: [JobKind, string, Record<string, unknown>, Record<string, unknown>][] = [
    ['transcode', '/transcode', validTranscode, { encoder: 'h264', bitrateKbps: '1000' }],
    ['summary', '/summary/mp4', validSummary, { format: 'mp4' }],
    [
      'stream',
      '/streams',
      { apiKey: KEY_A, inputUrl: validSummary.inputUrl, outputUrl: 'https://media.example.com/s/' },
      {},
    ],
  ];
  for (const [kind, path, body, spec] of submissions)
    it(`${kind}: POST ${path} with the new field → the job the handler gets holds it`, async () => {
      const h = await ingressAndWorker(contracts, kind);
      try {
        const res = await request(h.server)
          .post(path)
          .send({ ...body, audioChannels: 2 });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        await h.until(() => h.handled.length > 0);
        expect(h.handled[0]?.[kind]).to.deep.include({ ...spec, audioChannels: 2 });
      } finally {
        await h.close();
      }
    });

  it('the field is refused by the schemas as they are (the copy above is what lets it in)', async () => {
    const { server } = await makeIngress();
    const res = await request(server)
      .post('/transcode')
      .send({ ...validTranscode, audioChannels: 2 });
    expect(res.status).to.equal(400);
    expect(res.body).to.deep.equal({ error: 'audioChannels is not a known field' });
  });
});
