import { expect } from 'chai';
import request from 'supertest';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { createLogger } from '../../services/core/observability/logger.ts';
import { createEmbeddedBus } from '../../services/core/bus/embedded-bus.ts';
import { topics } from '../../services/core/bus/event-bus.ts';
import { KEY_A, KEY_B, awsCreds, downBus, makeIngress, validTranscode } from './ingress-fixture.ts';

// superagent types its serializer as returning a string; it sends a Buffer as given, byte for byte.
const asIs = (body: Buffer): string => body as unknown as string;

function expectErrorBody(res: request.Response, status: number, message: RegExp): void {
  expect(res.status).to.equal(status);
  expect(res.headers['content-type']).to.match(/^application\/json/);
  expect(Object.keys(res.body as object)).to.deep.equal(['error']);
  expect(res.body.error).to.match(message);
}

describe('ingress: protocol errors, status, and what reaches the bus', () => {
  describes404UnknownPathNaming();

  describesReadsGzipDeflateBr();

  describes400BodyValidUTF();

  describesReadyz503MomentService();

  describesGETJobsIdShows();

  describesServesHealthzReadyzCounts();

  describesClientGoesAwayMid();
});

function describes404UnknownPathNaming(): void {
  it('404 for an unknown path, naming it', async () => {
    const { server } = await makeIngress();
    expectErrorBody(
      await request(server).post('/transcodes').send(validTranscode),
      404,
      /no such path: POST \/transcodes/,
    );
  });

  it('405 for a wrong method, with Allow', async () => {
    const { server } = await makeIngress();
    const res = await request(server).get('/transcode');
    expectErrorBody(res, 405, /GET is not allowed on \/transcode; use POST/);
    expect(res.headers['allow']).to.equal('POST');
    expectErrorBody(await request(server).put('/summary/gif').send({}), 405, /use POST/);
    expectErrorBody(await request(server).delete('/jobs/abc'), 405, /use GET/);
  });

  it('415 when the body is not sent as JSON', async () => {
    const { server } = await makeIngress();
    expectErrorBody(
      await request(server).post('/transcode').set('content-type', 'text/plain').send('hello'),
      415,
      /Content-Type: application\/json/,
    );
    expectErrorBody(
      await request(server).post('/transcode').type('form').send({ apiKey: KEY_A }),
      415,
      /must be JSON/,
    );
  });

  it('413 when the body is larger than the limit, declared or streamed', async () => {
    const { server } = await makeIngress({ maxBodyBytes: 2048 });
    const big = { ...validTranscode, pad: 'x'.repeat(5000) };
    expectErrorBody(await request(server).post('/transcode').send(big), 413, /at most 2048 bytes/);
  });

  it('405 and OPTIONS answered from the router, with Allow; an unknown method on a known path is 405', async () => {
    const { server } = await makeIngress();
    const options = await request(server).options('/jobs/abc');
    expect(options.status).to.equal(200);
    expect(options.headers['allow']).to.match(/GET/);
    expectErrorBody(await request(server).patch('/transcode').send({}), 405, /use POST/);
    expectErrorBody(await request(server).options('/nowhere'), 404, /no such path/);
  });
}

function describesReadsGzipDeflateBr(): void {
  it('reads gzip, deflate and br bodies; refuses other codings, corrupt data, and bodies that unfold past the limit', async () => {
    const { server } = await makeIngress({ maxBodyBytes: 4096 });
    const json = Buffer.from(JSON.stringify(validTranscode));
    for (const [coding, packed] of [
      ['gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
      ['br', brotliCompressSync(json)],
    ] as const) {
      const res = await request(server)
        .post('/transcode')
        .set('content-type', 'application/json')
        .set('content-encoding', coding)
        .serialize(asIs)
        .send(packed);
      expect(res.status, coding).to.equal(200);
      expect(res.body.status).to.equal('queued');
    }
    const send = (coding: string, body: Buffer) =>
      request(server)
        .post('/transcode')
        .set('content-type', 'application/json')
        .set('content-encoding', coding)
        .serialize(asIs)
        .send(body);
    expectErrorBody(await send('compress', json), 415, /Content-Encoding compress/);
    expectErrorBody(await send('gzip', json), 400, /not valid gzip data/);
    const bomb = gzipSync(JSON.stringify({ ...validTranscode, pad: ' '.repeat(100_000) }));
    expect(bomb.length).to.be.below(4096);
    expectErrorBody(await send('gzip', bomb), 413, /at most 4096 bytes/);
  });

  it('400 for malformed JSON and for JSON that is not an object', async () => {
    const { server } = await makeIngress();
    expectErrorBody(
      await request(server)
        .post('/transcode')
        .set('content-type', 'application/json')
        .send('{"apiKey": '),
      400,
      /not valid JSON/,
    );
    expectErrorBody(
      await request(server)
        .post('/transcode')
        .set('content-type', 'application/json')
        .send('[1,2]'),
      400,
      /must be a JSON object/,
    );
    expectErrorBody(
      await request(server).post('/transcode').set('content-type', 'application/json').send('null'),
      400,
      /must be a JSON object/,
    );
  });
}

function describes400BodyValidUTF(): void {
  it('400 for a body that is not valid UTF-8, and nothing is queued', async () => {
    const inner = createEmbeddedBus({ path: ':memory:' });
    let published = 0;
    const bus = {
      ...inner,
      publish: async (records: Parameters<typeof inner.publish>[0]) => {
        published += records.length;
        await inner.publish(records);
      },
    };
    const { server } = await makeIngress({ bus });
    const json = Buffer.from(
      JSON.stringify({ ...validTranscode, watermark: { text: 'AB', fontSize: 20 } }),
    );
    const at = json.indexOf('AB');
    const body = Buffer.concat([
      json.subarray(0, at),
      Buffer.from([0xff, 0xfe, 0xc3]),
      json.subarray(at + 2),
    ]);
    expectErrorBody(
      await request(server)
        .post('/transcode')
        .set('content-type', 'application/json')
        .serialize(asIs)
        .send(body),
      400,
      /not valid UTF-8/,
    );
    expect(published).to.equal(0);
    // The same body with real text is taken.
    expect(
      (
        await request(server)
          .post('/transcode')
          .set('content-type', 'application/json')
          .serialize(asIs)
          .send(json)
      ).status,
    ).to.equal(200);
    expect(published).to.equal(1);
  });

  it('503 when the bus does not take the job, and nothing is acknowledged', async () => {
    const { server } = await makeIngress({ bus: downBus() });
    expectErrorBody(
      await request(server).post('/transcode').send(validTranscode),
      503,
      /event bus is unavailable/,
    );
    expectErrorBody(await request(server).get('/readyz'), 503, /not reachable/);
  });
}

function describesReadyz503MomentService(): void {
  it('/readyz is 503 from the moment the service begins to stop, while it still answers', async () => {
    let draining = false;
    const { server } = await makeIngress({ isDraining: () => draining });
    expect((await request(server).get('/readyz')).status).to.equal(200);
    draining = true;
    expectErrorBody(await request(server).get('/readyz'), 503, /stopping/);
    expect((await request(server).get('/healthz')).status).to.equal(200);
  });

  it('publishes the job with sealed credentials and without the API key', async () => {
    const { server, bus } = await makeIngress();
    const body = { ...validTranscode, inputUrl: 's3://bucket-1/in.mp4', inputCreds: awsCreds };
    const res = await request(server).post('/transcode').send(body);
    expect(res.status).to.equal(200);
    const seen: Buffer[] = [];
    const sub = await bus.subscribe({
      group: 'inspect',
      topics: [topics.transcodeRequests],
      fromBeginning: true,
      handler: async (r) => void seen.push(r.value),
    });
    await new Promise((r) => setTimeout(r, 50));
    await sub.close();
    expect(seen).to.have.length(1);
    const raw = seen[0]?.toString('utf8') ?? '';
    expect(raw).to.contain(res.body.id as string);
    expect(raw).not.to.contain(awsCreds.secretAccessKey);
    expect(raw).not.to.contain(awsCreds.accessKeyId);
    expect(raw).not.to.contain(KEY_A);
    expect(JSON.parse(raw).data.input.creds).to.include({ alg: 'A256GCM', keyId: 'test' });
  });
}

function describesGETJobsIdShows(): void {
  it('GET /jobs/:id shows the job to its organisation only', async () => {
    const { server } = await makeIngress();
    const ack = await request(server).post('/transcode').send(validTranscode);
    const id = ack.body.id as string;
    const mine = await request(server).get(`/jobs/${id}`).set('x-api-key', KEY_A);
    expect(mine.status).to.equal(200);
    expect(mine.body).to.include({
      id,
      type: 'transcode',
      status: 'queued',
      createdAt: ack.body.createdAt,
    });
    expect(mine.body.updatedAt).to.be.a('string');
    expect(mine.body.queuedSince, 'a queued job says since when it waits').to.equal(
      ack.body.createdAt,
    );
    const bearer = await request(server).get(`/jobs/${id}`).set('authorization', `Bearer ${KEY_A}`);
    expect(bearer.status).to.equal(200);
    expectErrorBody(
      await request(server).get(`/jobs/${id}`).set('x-api-key', KEY_B),
      404,
      /no job/,
    );
    expectErrorBody(await request(server).get(`/jobs/${id}`), 401, /X-Api-Key/);
    expectErrorBody(
      await request(server).get(`/jobs/${id}`).set('x-api-key', 'wrong-key-0123456789'),
      401,
      /not valid/,
    );
    expectErrorBody(
      await request(server).get('/jobs/not-a-uuid').set('x-api-key', KEY_A),
      404,
      /no job/,
    );
  });
}

function describesServesHealthzReadyzCounts(): void {
  it('serves /healthz and /readyz, counts requests, and keeps /metrics off the API', async () => {
    const { server, metrics: registered } = await makeIngress();
    expect((await request(server).get('/healthz')).body).to.deep.equal({ status: 'ok' });
    expect((await request(server).get('/readyz')).body).to.deep.equal({ status: 'ready' });
    expect((await request(server).get('/metrics')).status).to.equal(404);
    await request(server).post('/transcode').send(validTranscode);
    await request(server)
      .post('/jobs/6f1c1f0e-8a51-4d4e-9d53-5b7a4d1f8a10')
      .set('x-api-key', KEY_A);
    const metrics = { text: await registered.registry.metrics() };
    // A known route answered with 405 keeps its route; only an unknown path (here /metrics,
    // which the API port does not serve) is unmatched.
    expect(metrics.text).to.match(
      /media_http_requests_total\{route="\/jobs\/:id",method="POST",status="405"\} 1/,
    );
    expect(metrics.text).to.match(
      /media_http_requests_total\{route="unmatched",method="GET",status="404"\} 1/,
    );
    expect(metrics.text).to.match(/media_jobs_submitted_total\{kind="transcode"\} 1/);
    expect(metrics.text).to.match(
      /media_http_requests_total\{route="\/transcode",method="POST",status="200"\} 1/,
    );
  });

  it('never answers 500 to hostile bodies', async () => {
    const { server } = await makeIngress();
    const hostile: unknown[] = [
      JSON.stringify(validTranscode).replace(/}$/, ',"__proto__":{"admin":true}}'),
      JSON.stringify(validTranscode).replace(/}$/, ',"constructor":{"prototype":{"x":1}}}'),
      { ...validTranscode, watermark: [] },
      { ...validTranscode, watermark: null },
      { ...validTranscode, width: 1e308 },
      { ...validTranscode, inputUrl: 'https://' + 'a'.repeat(5000) + '.com/x' },
      { apiKey: KEY_A, inputUrl: {}, outputUrl: [], encoder: null },
      'just a string',
      12,
    ];
    for (const body of hostile) {
      const raw = typeof body === 'string' && body.startsWith('{') ? body : JSON.stringify(body);
      const res = await request(server)
        .post('/transcode')
        .set('content-type', 'application/json')
        .send(raw);
      expect(res.status, raw.slice(0, 80)).to.be.within(400, 499);
      expect(Object.keys(res.body as object)).to.deep.equal(['error']);
    }
  });
}

function describesClientGoesAwayMid(): void {
  it('a client that goes away mid-body is neither a 5xx nor an error log, and the next request is served', async () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'debug', write: (l) => lines.push(l) });
    const { server, metrics } = await makeIngress({ log });
    const http = createServer((req, res) => void server(req, res));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    try {
      const socket = connect(port, '127.0.0.1');
      const requested = once(http, 'request');
      await once(socket, 'connect');
      socket.write(
        'POST /transcode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"apiKey":',
      );
      await requested;
      socket.destroy();
      await eventually(() => lines.some((l) => l.includes('http.client_closed_request')), 5000);
      const counted =
        (await metrics.registry.getSingleMetric('media_http_requests_total')?.get())?.values ?? [];
      expect(counted.filter((v) => String(v.labels['status']).startsWith('5'))).to.deep.equal([]);
      expect(
        lines.filter((l) => (JSON.parse(l) as { level: string }).level === 'error'),
      ).to.deep.equal([]);
      const next = await request(http).post('/transcode').send(validTranscode);
      expect(next.status).to.equal(200);
    } finally {
      http.close();
    }
  });
}

async function eventually(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
