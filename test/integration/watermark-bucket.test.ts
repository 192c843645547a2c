// The watermark library in an S3-compatible bucket, against the S3 emulator the test services
// start (moto): the adapter on its own, then the all-in-one service configured with
// WATERMARK_BUCKET running a job that uses an image uploaded over HTTP.
import { expect } from 'chai';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { startAllInOne, type AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { loadConfig } from '../../services/core/config.ts';
import { MediaError } from '../../services/core/errors.ts';
import { sniffImage } from '../../services/core/media/sniff-image.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createBucketLibrary } from '../../services/core/watermarks/watermark-store.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { generateImage } from '../support/generate-clip.ts';
import {
  expectRedLogoTopLeft,
  transcodeWithNamedWatermark,
  uploadRedLogo,
} from '../support/watermark-job.ts';
import { randomName, requireEnv } from './storage/media-store-suite.ts';

const KEY_A = 'wm-bucket-key-a-0123456789';
const KEY_B = 'wm-bucket-key-b-0123456789';
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

let endpoint: string;
let admin: S3Client;
let bucket: string;
let work: string;
let png: Buffer;

describe('watermark library in an S3-compatible bucket', function () {
  this.timeout(180_000);

  before(async () => {
    endpoint = requireEnv('TEST_S3_ENDPOINT');
    admin = new S3Client({ endpoint, forcePathStyle: true, region: 'us-east-1', credentials });
    bucket = randomName('wm');
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    work = await mkdtemp(join(tmpdir(), 'wm-bucket-'));
    await generateImage(join(work, 'logo.png'), { width: 48, height: 24 });
    png = await readFile(join(work, 'logo.png'));
  });

  after(async () => {
    const listed = await admin.send(new ListObjectsV2Command({ Bucket: bucket }));
    const objects = (listed.Contents ?? []).map((o) => ({ Key: o.Key }));
    if (objects.length > 0)
      await admin.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects } }));
    await admin.send(new DeleteBucketCommand({ Bucket: bucket }));
    admin.destroy();
    await rm(work, { recursive: true, force: true });
  });

  describesPutsListsFetchesRemoves();

  describesAllInOneWithWatermarkBucket();
});

function describesPutsListsFetchesRemoves(): void {
  it('puts, lists, fetches and removes per organisation', async () => {
    const library = createBucketLibrary({ bucket, region: 'us-east-1', endpoint, credentials });
    try {
      const facts = sniffImage(png);
      if (!facts) throw new Error('the test image does not sniff');
      const first = await library.put('org-a', 'logo.png', png, facts);
      expect(first.created).to.equal(true);
      expect(first.image).to.deep.include({
        name: 'logo.png',
        type: 'image/png',
        sizeBytes: png.length,
        width: 48,
        height: 24,
      });
      expect((await library.put('org-a', 'logo.png', png, facts)).created).to.equal(false);
      await library.put('org-a', 'b', png, facts);
      const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'org-a/b' }));
      expect(head.ContentType).to.equal('image/png');

      expect((await library.list('org-a')).map((i) => i.name)).to.deep.equal(['b', 'logo.png']);
      expect(await library.list('org-b')).to.deep.equal([]);
      // An org id that is a prefix of another does not see the other's images.
      expect(await library.list('org')).to.deep.equal([]);

      const dest = join(work, 'fetched');
      const signal = new AbortController().signal;
      await library.fetch('org-a', 'logo.png', dest, { signal, maxBytes: 1024 * 1024 });
      expect(await readFile(dest)).to.deep.equal(png);
      const missing = await library
        .fetch('org-b', 'logo.png', join(work, 'never'), { signal, maxBytes: 1024 * 1024 })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(missing).to.be.instanceOf(MediaError);
      expect(missing).to.include({ code: 'watermark_unavailable' });
      expect(await stat(join(work, 'never')).catch(() => 'absent')).to.equal('absent');

      expect(await library.remove('org-b', 'b')).to.equal(false);
      expect(await library.remove('org-a', 'b')).to.equal(true);
      expect((await library.list('org-a')).map((i) => i.name)).to.deep.equal(['logo.png']);
    } finally {
      library.close();
    }
  });
}

function describesAllInOneWithWatermarkBucket(): void {
  describe('all-in-one with WATERMARK_BUCKET', () => {
    let files: TestServer;
    let app: AllInOne;
    let dataDir: string;

    before(async () => {
      files = await startTestServer();
      dataDir = await mkdtemp(join(tmpdir(), 'media-wm-bucket-data-'));
      app = await startAllInOne(
        loadConfig({
          PORT: '0',
          METRICS_PORT: '0',
          API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b`,
          ALLOW_PRIVATE_NETWORKS: 'true',
          DATA_DIR: dataDir,
          RETRY_BACKOFF_MS: '50',
          LOG_LEVEL: 'silent',
          WATERMARK_BUCKET: bucket,
          WATERMARK_S3_ENDPOINT: endpoint,
          WATERMARK_S3_ACCESS_KEY_ID: credentials.accessKeyId,
          WATERMARK_S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
        }),
        { log: silentLogger },
      );
    });

    after(async () => {
      await app?.close();
      await files?.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('an image PUT over HTTP lands in the bucket and a job burns it in', async () => {
      const stored = await uploadRedLogo(app, files, KEY_A, 'brand');
      expect(stored.status, JSON.stringify(stored.body)).to.equal(201);
      const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'org-a/brand' }));
      expect(head.ContentType).to.equal('image/png');
      expect(await stat(join(dataDir, 'watermarks')).catch(() => 'absent')).to.equal('absent');

      const listed = await fetch(`${app.ingress.url}/watermarks`, {
        headers: { 'x-api-key': KEY_A },
      });
      const body = (await listed.json()) as { images: { name: string; width: number }[] };
      expect(body.images.find((i) => i.name === 'brand')).to.deep.include({ width: 64 });

      const done = await transcodeWithNamedWatermark(app, files, KEY_A, 'brand', 'wm-s3.mp4');
      expect(done['status'], JSON.stringify(done)).to.equal('succeeded');
      await expectRedLogoTopLeft(join(files.dir, 'wm-s3.mp4'));

      const other = await transcodeWithNamedWatermark(app, files, KEY_B, 'brand', 'wm-s3-b.mp4');
      expect(other['code']).to.equal('watermark_unavailable');
      expect(other['message']).to.equal('no watermark image named "brand" for this organisation');

      const removed = await fetch(`${app.ingress.url}/watermarks/brand`, {
        method: 'DELETE',
        headers: { 'x-api-key': KEY_A },
      });
      expect(removed.status).to.equal(204);
      const gone = await transcodeWithNamedWatermark(app, files, KEY_A, 'brand', 'wm-s3-gone.mp4');
      expect(gone['code']).to.equal('watermark_unavailable');
    });
  });
}
