import { expect } from 'chai';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import type { WatermarkList } from '../../services/core/contracts/types.generated.ts';
import { createFolderLibrary } from '../../services/core/watermarks/watermark-library.ts';
import { generateImage } from '../support/generate-clip.ts';
import { KEY_A, KEY_B, makeIngress } from './ingress-fixture.ts';

let dir: string;
let images: string;
const bytes: Record<string, Buffer> = {};
let handler: Awaited<ReturnType<typeof makeIngress>>['server'];
const put = (name: string, body: Buffer, type: string, key = KEY_A) =>
  request(handler)
    .put(`/watermarks/${name}`)
    .set('x-api-key', key)
    .set('content-type', type)
    .send(body);

describe('watermark library over HTTP (PUT/GET/DELETE /watermarks)', function () {
  this.timeout(30_000);

  before(async () => {
    images = await mkdtemp(join(tmpdir(), 'wm-images-'));
    for (const [name, w, h] of [
      ['logo.png', 64, 32],
      ['logo.jpg', 64, 32],
      ['logo.webp', 64, 32],
      ['wide.png', 2048, 16],
    ] as const) {
      await generateImage(join(images, name), { width: w, height: h });
      bytes[name] = await readFile(join(images, name));
    }
  });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wm-library-'));
    ({ server: handler } = await makeIngress({
      watermarks: {
        library: createFolderLibrary(dir),
        maxBytes: 64 * 1024,
        maxWidth: 1024,
        maxHeight: 1024,
      },
    }));
  });

  afterEach(() => rm(dir, { recursive: true, force: true }));
  after(() => rm(images, { recursive: true, force: true }));

  describesStoresImageUnderName();

  describesGivesStoredImageBack();

  describesRefusesPngJpegWebp();

  describesRefusesBodyOverSize();

  describesAnswers405AllowOther();
});

function describesStoresImageUnderName(): void {
  it('stores an image under a name, lists it with its facts, replaces and deletes it', async () => {
    const png = bytes['logo.png'] ?? Buffer.alloc(0);
    const created = await put('logo', png, 'image/png');
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect(created.body).to.deep.include({
      name: 'logo',
      type: 'image/png',
      sizeBytes: png.length,
      width: 64,
      height: 32,
    });
    expect(Date.parse(String(created.body.updatedAt))).to.be.closeTo(Date.now(), 60_000);
    // Where a worker reads it: <dir>/<orgId>/<name>, the bytes as sent, nothing else left behind.
    expect(await readFile(join(dir, 'org-a', 'logo'))).to.deep.equal(png);

    const webp = bytes['logo.webp'] ?? Buffer.alloc(0);
    const replaced = await put('logo', webp, 'image/webp');
    expect(replaced.status).to.equal(200);
    expect(replaced.body).to.deep.include({ type: 'image/webp', sizeBytes: webp.length });
    expect(
      (await put('b.jpg', bytes['logo.jpg'] ?? Buffer.alloc(0), 'image/jpeg')).status,
    ).to.equal(201);
    expect(await readdir(join(dir, 'org-a'))).to.deep.equal(['b.jpg', 'logo']);

    const listed = await request(handler)
      .get('/watermarks')
      .set('authorization', `Bearer ${KEY_A}`);
    expect(listed.status).to.equal(200);
    const { images: found } = listed.body as WatermarkList;
    expect(found.map((i) => [i.name, i.type])).to.deep.equal([
      ['b.jpg', 'image/jpeg'],
      ['logo', 'image/webp'],
    ]);

    const removed = await request(handler).delete('/watermarks/logo').set('x-api-key', KEY_A);
    expect(removed.status).to.equal(204);
    const again = await request(handler).delete('/watermarks/logo').set('x-api-key', KEY_A);
    expect(again.status).to.equal(404);
    expect(again.body).to.deep.equal({ error: 'no watermark image named "logo" for this API key' });
  });
}

function describesGivesStoredImageBack(): void {
  it('gives a stored image back, as stored and with its type, to its own organisation only', async () => {
    for (const [name, type] of [
      ['logo.png', 'image/png'],
      ['logo.jpg', 'image/jpeg'],
      ['logo.webp', 'image/webp'],
    ] as const) {
      const image = bytes[name] ?? Buffer.alloc(0);
      expect((await put(name, image, type)).status).to.equal(201);
      const res = await request(handler)
        .get(`/watermarks/${name}`)
        .set('x-api-key', KEY_A)
        .buffer(true)
        .parse((r, done) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => done(null, Buffer.concat(chunks)));
        });
      expect(res.status, name).to.equal(200);
      expect(res.headers['content-type'], name).to.equal(type);
      expect(Buffer.compare(res.body as Buffer, image), name).to.equal(0);
    }
    const otherOrg = await request(handler).get('/watermarks/logo.png').set('x-api-key', KEY_B);
    expect(otherOrg.status).to.equal(404);
    expect(otherOrg.body).to.deep.equal({
      error: 'no watermark image named "logo.png" for this API key',
    });
    const missing = await request(handler).get('/watermarks/none').set('x-api-key', KEY_A);
    expect(missing.status).to.equal(404);
    const noKey = await request(handler).get('/watermarks/logo.png');
    expect(noKey.status).to.equal(401);
  });

  it("keeps each organisation's images to itself", async () => {
    expect(
      (await put('logo', bytes['logo.png'] ?? Buffer.alloc(0), 'image/png', KEY_A)).status,
    ).to.equal(201);
    const listB = await request(handler).get('/watermarks').set('x-api-key', KEY_B);
    expect(listB.body).to.deep.equal({ images: [] });
    const deleteB = await request(handler).delete('/watermarks/logo').set('x-api-key', KEY_B);
    expect(deleteB.status).to.equal(404);
    // B's own image of the same name is another image.
    expect(
      (await put('logo', bytes['logo.jpg'] ?? Buffer.alloc(0), 'image/jpeg', KEY_B)).status,
    ).to.equal(201);
    const listA = await request(handler).get('/watermarks').set('x-api-key', KEY_A);
    expect(listA.body.images[0]).to.deep.include({ name: 'logo', type: 'image/png' });
  });
}

function describesRefusesPngJpegWebp(): void {
  it('refuses what is not a png, jpeg or webp of the declared type with 415', async () => {
    const cases: [Buffer, string, RegExp][] = [
      [
        bytes['logo.png'] ?? Buffer.alloc(0),
        'image/jpeg',
        /the body is image\/png, not the declared image\/jpeg/,
      ],
      [
        Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00', 'latin1'),
        'image/png',
        /not a png, jpeg or webp/,
      ],
      [
        Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
        'image/svg+xml',
        /Content-Type: image\/png, image\/jpeg or image\/webp/,
      ],
      [bytes['logo.png'] ?? Buffer.alloc(0), 'application/octet-stream', /Content-Type/],
    ];
    for (const [body, type, message] of cases) {
      const res = await put('x', body, type);
      expect(res.status, type).to.equal(415);
      expect(res.body.error).to.match(message);
    }
    const gzipped = await request(handler)
      .put('/watermarks/x')
      .set('x-api-key', KEY_A)
      .set('content-type', 'image/png')
      .set('content-encoding', 'gzip')
      .send(bytes['logo.png']);
    expect(gzipped.status).to.equal(415);
    expect(await readdir(dir)).to.deep.equal([]);
  });
}

function describesRefusesBodyOverSize(): void {
  it('refuses a body over the size cap with 413, declared or streamed', async () => {
    const big = Buffer.concat([bytes['logo.png'] ?? Buffer.alloc(0), Buffer.alloc(70 * 1024)]);
    const declared = await put('big', big, 'image/png');
    expect(declared.status).to.equal(413);
    expect(declared.body).to.deep.equal({ error: 'the image must be at most 65536 bytes' });

    // Chunked, with no Content-Length: refused once the count passes the cap.
    const listening: Server = createServer((req, res) => void handler(req, res));
    listening.listen(0, '127.0.0.1');
    await once(listening, 'listening');
    try {
      const { port } = listening.address() as AddressInfo;
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path: '/watermarks/big',
        headers: {
          'x-api-key': KEY_A,
          'content-type': 'image/png',
          'transfer-encoding': 'chunked',
        },
      });
      const answered = once(req, 'response');
      for (let i = 0; i < 10; i++) req.write(big.subarray(i * 8192, (i + 1) * 8192));
      req.end();
      const [res] = (await answered) as [IncomingMessage];
      let text = '';
      for await (const chunk of res) text += String(chunk);
      expect(res.statusCode).to.equal(413);
      expect(JSON.parse(text)).to.deep.equal({ error: 'the image must be at most 65536 bytes' });
    } finally {
      listening.close();
    }
    expect(await readdir(dir)).to.deep.equal([]);
  });

  it('refuses an image over the dimension caps, a bad name, or no key', async () => {
    const wide = await put('wide', bytes['wide.png'] ?? Buffer.alloc(0), 'image/png');
    expect(wide.status).to.equal(400);
    expect(wide.body.error).to.equal('the image is 2048×16 pixels; at most 1024×1024 are accepted');
    for (const name of ['.hidden', '..', 'a%2Fb', 'x'.repeat(129), '%C3%A9t%C3%A9']) {
      const res = await put(name, bytes['logo.png'] ?? Buffer.alloc(0), 'image/png');
      expect(res.status, name).to.be.oneOf([400, 404]);
      expect(res.body.error, name).to.be.a('string');
    }
    const badName = await put('.hidden', bytes['logo.png'] ?? Buffer.alloc(0), 'image/png');
    expect(badName.status).to.equal(400);
    expect(badName.body.error).to.match(/^the watermark name must be 1-128 letters/);
    const noKey = await request(handler).get('/watermarks');
    expect(noKey.status).to.equal(401);
    const badKey = await request(handler)
      .delete('/watermarks/logo')
      .set('x-api-key', 'nope-nope-nope-nope');
    expect(badKey.status).to.equal(401);
    expect(await readdir(dir)).to.deep.equal([]);
  });
}

function describesAnswers405AllowOther(): void {
  it('answers 405 with Allow for other methods, and says when no library is set up', async () => {
    const res = await request(handler).post('/watermarks/logo').set('x-api-key', KEY_A);
    expect(res.status).to.equal(405);
    expect(res.headers['allow'])
      .to.match(/PUT/)
      .and.match(/DELETE/);
    const { server: bare } = await makeIngress();
    const off = await request(bare).get('/watermarks').set('x-api-key', KEY_A);
    expect(off.status).to.equal(404);
    expect(off.body).to.deep.equal({
      error: 'named watermark images are not set up on this service',
    });
  });
}
