import { expect } from 'chai';
import request from 'supertest';
import { topics } from '../../services/core/bus/event-bus.ts';
import { decodeAll, recordingBus } from '../notifier/notifier-fixture.ts';
import { KEY_A, KEY_B, awsCreds, contracts, makeIngress } from './ingress-fixture.ts';

const validStream = {
  apiKey: KEY_A,
  inputUrl: 'https://media.example.com/in.mp4',
  outputUrl: 'https://media.example.com/streams/film/',
};

const setup = async () => {
  const bus = recordingBus();
  const ingress = await makeIngress({ bus });
  const requests = () => decodeAll(bus.published.filter((r) => r.topic === topics.streamRequests));
  return { bus, ingress, requests };
};

describe('POST /streams', () => {
  describesQueuesStreamJobOwn();

  const refused: [string, Record<string, unknown>, RegExp][] = [
    [
      'an output that is not a folder',
      { outputUrl: 'https://media.example.com/out.m3u8' },
      /outputUrl must end with \//,
    ],
    ['an unknown format', { formats: ['smooth'] }, /formats/],
    ['vp9 with HLS', { encoder: 'vp9' }, /formats must be \["dash"\] when encoder is vp9/],
    ['vp9 with both formats', { encoder: 'vp9', formats: ['hls', 'dash'] }, /when encoder is vp9/],
    ['a rung without bitrate', { ladder: [{ height: 720 }] }, /ladder/],
    ['a rung under 144 lines', { ladder: [{ height: 100, bitrateKbps: 500 }] }, /ladder/],
    [
      'nine rungs',
      { ladder: Array.from({ length: 9 }, (_, k) => ({ height: 200 + k, bitrateKbps: 500 })) },
      /ladder/,
    ],
    [
      'a ladder mode that does not exist',
      { ladder: 'per-scene' },
      /^ladder must be "per-title", "fixed" or 1 to 8 rungs/,
    ],
    ['a ladder that is a number', { ladder: 4 }, /^ladder must be "per-title", "fixed"/],
    ['a segment of 30 s', { segmentSeconds: 30 }, /segmentSeconds/],
    ['a trim starting below zero', { trim: { startSeconds: -1 } }, /trim\.startSeconds/],
    ['a loudness target under −36 LUFS', { loudness: { targetLufs: -50 } }, /loudness\.targetLufs/],
    ['an unknown field', { bitrateKbps: '1000' }, /bitrateKbps/],
    ['a bucket output without creds', { outputUrl: 's3://bucket-1/streams/' }, /outputCreds/],
  ];
  for (const [name, over, message] of refused)
    it(`refuses ${name} with 400 and a message naming the field; nothing queued`, async () => {
      const { ingress, requests } = await setup();
      const res = await request(ingress.server)
        .post('/streams')
        .send({ ...validStream, ...over });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.match(message);
      expect(requests()).to.have.length(0);
    });

  describesVp9DASHOnlyTaken();

  describesOpenAPIDocumentRequestSchema();
});

function describesQueuesStreamJobOwn(): void {
  it('queues a stream job on its own topic: the options under `stream`, credentials sealed, no API key', async () => {
    const { ingress, requests } = await setup();
    const body = {
      ...validStream,
      outputUrl: 's3://bucket-1/streams/film/',
      outputCreds: awsCreds,
      formats: ['hls'],
      encoder: 'h265',
      segmentSeconds: 6,
      ladder: [
        { height: 720, bitrateKbps: 2500 },
        { height: 360, bitrateKbps: 700 },
      ],
      thumbnails: { intervalSeconds: 10 },
      watermark: { text: '© Example', fontSize: 24 },
      successUrl: 'https://hooks.example.com/ok',
    };
    const res = await request(ingress.server).post('/streams').send(body);
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ status: 'queued' });
    const [event] = requests();
    expect(event?.type).to.equal('media.job.requested');
    const data = event?.data as Record<string, unknown>;
    expect(data).to.include({ jobId: res.body.id, kind: 'stream', orgId: 'org-a', attempt: 1 });
    expect(data['stream']).to.deep.equal({
      formats: ['hls'],
      encoder: 'h265',
      segmentSeconds: 6,
      ladder: body.ladder,
      thumbnails: { intervalSeconds: 10 },
      watermark: body.watermark,
    });
    expect(data['output']).to.have.property('creds').that.has.property('alg', 'A256GCM');
    expect(JSON.stringify(data)).to.not.contain(KEY_A).and.not.contain('very-secret-value');
    expect(contracts.events['media.job.requested'](data).ok).to.equal(true);
    const status = await request(ingress.server)
      .get(`/jobs/${res.body.id}`)
      .set('x-api-key', KEY_A);
    expect(status.body).to.include({ type: 'stream', status: 'queued' });
  });

  it('a minimal body is a stream with every default (both formats, h264, the default ladder)', async () => {
    const { ingress, requests } = await setup();
    expect((await request(ingress.server).post('/streams').send(validStream)).status).to.equal(200);
    expect(requests()[0]?.data).to.have.property('stream').that.deep.equals({});
  });

  it('takes the ladder modes per-title and fixed, carried to the job as given', async () => {
    for (const ladder of ['per-title', 'fixed']) {
      const { ingress, requests } = await setup();
      const res = await request(ingress.server)
        .post('/streams')
        .send({ ...validStream, ladder });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(requests()[0]?.data).to.have.property('stream').that.deep.equals({ ladder });
    }
  });
}

function describesVp9DASHOnlyTaken(): void {
  it('vp9 with DASH only is taken', async () => {
    const { ingress } = await setup();
    const res = await request(ingress.server)
      .post('/streams')
      .send({ ...validStream, encoder: 'vp9', formats: ['dash'] });
    expect(res.status).to.equal(200);
  });

  it('same authentication, idempotency and cancel as the other jobs', async () => {
    const { ingress, bus, requests } = await setup();
    expect(
      (
        await request(ingress.server)
          .post('/streams')
          .send({ ...validStream, apiKey: 'nope-0123456789' })
      ).status,
    ).to.equal(401);
    const first = await request(ingress.server)
      .post('/streams')
      .set('Idempotency-Key', 'k1')
      .send(validStream);
    const again = await request(ingress.server)
      .post('/streams')
      .set('Idempotency-Key', 'k1')
      .send(validStream);
    expect(again.body).to.deep.equal(first.body);
    expect(requests()).to.have.length(1);
    const other = await request(ingress.server)
      .post('/transcode')
      .set('Idempotency-Key', 'k1')
      .send({
        ...validStream,
        outputUrl: 'https://media.example.com/o.mp4',
        encoder: 'h264',
        container: 'mp4',
        bitrateKbps: '1000',
      });
    expect(other.status).to.equal(409);
    const cancel = await request(ingress.server)
      .post(`/jobs/${first.body.id}/cancel`)
      .set('x-api-key', KEY_A);
    expect(cancel.status).to.equal(202);
    const [event] = decodeAll(bus.published.filter((r) => r.topic === topics.jobCancels));
    expect(event?.data).to.include({ jobId: first.body.id, kind: 'stream' });
    expect(
      (await request(ingress.server).get(`/jobs/${first.body.id}`).set('x-api-key', KEY_B)).status,
    ).to.equal(404);
  });
}

function describesOpenAPIDocumentRequestSchema(): void {
  it('is in the OpenAPI document with its request schema', async () => {
    const { ingress } = await setup();
    const doc = (await request(ingress.server).get('/openapi.json')).body as {
      paths: Record<string, { post?: { requestBody?: unknown } }>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.paths['/streams']?.post?.requestBody).to.deep.include({ required: true });
    expect(doc.components.schemas).to.have.property('StreamRequest');
  });
}
