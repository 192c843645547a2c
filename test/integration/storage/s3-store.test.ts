// s3:// against the S3 emulator from scripts/test-services (moto). moto accepts any access
// key and signature, so refused credentials are not tested here (see azure-store.test.ts).
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { MediaError } from '../../../services/core/errors.ts';
import { createS3StoreFactory } from '../../../services/core/storage/s3-store.ts';
import {
  closedPort,
  describeMediaStore,
  randomName,
  requireEnv,
  type StoreHarness,
  type TestBucket,
} from './media-store-suite.ts';

function s3Settings() {
  return {
    endpoint: requireEnv('TEST_S3_ENDPOINT'),
    credentials: {
      region: process.env.TEST_S3_REGION || 'us-east-1',
      accessKeyId: process.env.TEST_S3_ACCESS_KEY_ID || 'test',
      secretAccessKey: process.env.TEST_S3_SECRET_ACCESS_KEY || 'test',
    },
  };
}

function adminClient(): S3Client {
  const { endpoint, credentials } = s3Settings();
  return new S3Client({ endpoint, forcePathStyle: true, region: credentials.region, credentials });
}

async function createBucket(admin: S3Client): Promise<TestBucket> {
  const name = randomName('s3t');
  await admin.send(new CreateBucketCommand({ Bucket: name }));
  return {
    url: (key) => `s3://${name}/${key}`,
    contentType: async (key) =>
      (await admin.send(new HeadObjectCommand({ Bucket: name, Key: key }))).ContentType,
    remove: async () => {
      const listed = await admin.send(new ListObjectsV2Command({ Bucket: name }));
      const objects = (listed.Contents ?? []).map((o) => ({ Key: o.Key }));
      if (objects.length > 0)
        await admin.send(new DeleteObjectsCommand({ Bucket: name, Delete: { Objects: objects } }));
      await admin.send(new DeleteBucketCommand({ Bucket: name }));
    },
  };
}

async function s3Harness(): Promise<StoreHarness> {
  const { endpoint, credentials } = s3Settings();
  const admin = adminClient();
  const factory = createS3StoreFactory({ endpoint, forcePathStyle: true });
  const unreachable = createS3StoreFactory({
    endpoint: `http://127.0.0.1:${await closedPort()}`,
    forcePathStyle: true,
    maxAttempts: 1,
  });
  return {
    store: factory(credentials),
    createBucket: () => createBucket(admin),
    missingBucketUrl: (key) => `s3://${randomName('nobucket')}/${key}`,
    unreachable: {
      store: unreachable(credentials),
      url: (key) => `s3://${randomName('s3t')}/${key}`,
    },
    close: async () => admin.destroy(),
  };
}

describeMediaStore('s3 (moto)', s3Harness);

describe('s3 store specifics', function () {
  this.timeout(60_000);
  let dir: string;
  let admin: S3Client;
  let bucket: TestBucket | undefined;
  const never = new AbortController().signal;

  before(async () => {
    s3Settings();
    admin = adminClient();
    dir = await mkdtemp(join(tmpdir(), 's3-store-'));
  });
  after(async () => {
    admin?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await bucket?.remove();
    bucket = undefined;
  });

  it('uploads a file larger than one part as a multipart upload and leaves no upload open', async () => {
    const { endpoint, credentials } = s3Settings();
    bucket = await createBucket(admin);
    const store = createS3StoreFactory({
      endpoint,
      forcePathStyle: true,
      partSizeBytes: 5 * 1024 * 1024,
    })(credentials);
    const source = join(dir, 'big.bin');
    const content = randomBytes(11 * 1024 * 1024 + 7);
    await writeFile(source, content);
    const url = bucket.url('multi/part.bin');
    const up = await store.upload(source, url, { signal: never, contentType: 'video/mp4' });
    expect(up.bytes).to.equal(content.length);
    await store.download(url, join(dir, 'back.bin'), { signal: never, maxBytes: content.length });
    expect((await readFile(join(dir, 'back.bin'))).equals(content)).to.equal(true);
    const name = url.slice('s3://'.length).split('/')[0];
    const open = await admin.send(new ListMultipartUploadsCommand({ Bucket: name }));
    expect(open.Uploads ?? []).to.have.length(0);
  });

  it('refuses missing or malformed credentials without calling the service, never using ambient ones', async () => {
    const { endpoint, credentials } = s3Settings();
    const factory = createS3StoreFactory({ endpoint, forcePathStyle: true });
    const cases: unknown[] = [
      undefined,
      {},
      { ...credentials, secretAccessKey: '' },
      { ...credentials, region: 'evil.example.com#' },
    ];
    for (const creds of cases) {
      const error = await factory(creds)
        .download('s3://some-bucket/a.mp4', join(dir, 'x'), { signal: never, maxBytes: 10 })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(MediaError);
      expect((error as MediaError).code).to.equal('input_rejected');
    }
  });

  it('refuses bucket names that are not valid S3 names', async () => {
    const { endpoint, credentials } = s3Settings();
    const store = createS3StoreFactory({ endpoint, forcePathStyle: true })(credentials);
    const error = await store
      .upload(join(dir, 'none'), 's3://Bad_Bucket/a.mp4', {
        signal: never,
        contentType: 'video/mp4',
      })
      .catch((e: unknown) => e);
    expect((error as MediaError).code).to.equal('output_rejected');
  });
});
