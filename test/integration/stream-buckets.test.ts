import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { CreateBucketCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { JobRequested } from '../../services/core/contracts/types.generated.ts';
import { MediaError } from '../../services/core/errors.ts';
import type { JobContext } from '../../services/core/worker/job-handler.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createAzureStoreFactory } from '../../services/core/storage/azure-store.ts';
import { createGcsStoreFactory } from '../../services/core/storage/gcs-store.ts';
import type { MediaStore } from '../../services/core/storage/media-store.ts';
import { createStoreResolver } from '../../services/core/storage/resolve-store.ts';
import { createS3StoreFactory } from '../../services/core/storage/s3-store.ts';
import { createStreamHandler } from '../../services/streamer/handle-stream.ts';
import { generateClip } from '../support/generate-clip.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { storageEmulators } from '../support/storage-emulators.ts';
import { startStreamFileServer, type StreamFileServer } from '../support/stream-file-server.ts';

type Scheme = 's3' | 'azure' | 'gcp';
const isPlaylist = (k: string): boolean => /\.(m3u8|mpd|vtt)$/.test(k);

const suffix = Math.random().toString(36).slice(2, 8);
const bucket = `streams-${suffix}`;
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const creds: Record<Scheme, unknown> = {
  s3: { region: 'us-east-1', accessKeyId: 'test', secretAccessKey: 'test-secret-value' },
  azure: undefined,
  gcp: {
    type: 'service_account',
    project_id: 'test-project',
    private_key_id: 'k',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: 'svc@test-project.iam.gserviceaccount.com',
  },
};
let input: StreamFileServer;
let list: Record<Scheme, (prefix: string) => Promise<string[]>>;
let buckets: Record<Scheme, (credentials: unknown) => MediaStore>;
/** Completed uploads (keys after the bucket), in order, and a hook run before each. */
let uploads: string[];
let beforeUpload: (key: string) => void;
/** The real bucket store, with each completed upload recorded and the hook run first. */
const recorded =
  (make: (c: unknown) => MediaStore) =>
  (c: unknown): MediaStore => {
    const store = make(c);
    return {
      download: (url, dest, o) => store.download(url, dest, o),
      remove: (url, o) => store.remove(url, o),
      upload: async (src, url, o) => {
        const key = url.replace(/^[a-z0-9]+:\/\/[^/]+\//, '');
        beforeUpload(key);
        const done = await store.upload(src, url, o);
        uploads.push(key);
        return done;
      },
    };
  };
const run = (scheme: Scheme, prefix: string, signal = new AbortController().signal) => {
  const handler = createStreamHandler(
    testMediaJobDeps({
      resolveStore: createStoreResolver({
        http: testMediaJobDeps().httpStore,
        buckets: {
          s3: recorded(buckets.s3),
          azure: recorded(buckets.azure),
          gcp: recorded(buckets.gcp),
        },
      }),
    }),
  );
  const job: JobRequested = {
    jobId: '00000000-0000-4000-8000-000000000042',
    kind: 'stream',
    orgId: 'o',
    attempt: 1,
    submittedAt: new Date().toISOString(),
    input: { url: `${input.url}/in.mp4` },
    // The handler opens the credentials through ctx.openSecret (given in clear here).
    output: { url: `${scheme}://${bucket}/${prefix}` },
    stream: { segmentSeconds: 2, thumbnails: { intervalSeconds: 2 } },
  };
  const ctx: JobContext = {
    signal,
    attempt: 1,
    kind: 'stream',
    orgId: 'o',
    span: (_n, work) => work(),
    log: silentLogger,
    progress: () => undefined,
    openSecret: () => creds[scheme],
    waiting: () => undefined,
    begin: () => Promise.resolve(),
  };
  return handler(job, ctx);
};

/**
 * A stream job publishing to each bucket emulator: the objects listed in the bucket afterwards,
 * the order their uploads completed in (recorded around the real store), and what a failed or
 * canceled publish leaves: no playlist, no manifest.
 */
describe('stream jobs publishing to S3, Azure and GCS (emulators)', function () {
  this.timeout(180_000);

  before(async () => {
    const emulators = storageEmulators();
    const { s3Endpoint, azureAccount, azureKey, gcsEndpoint, s3, blobs, gcs } = emulators;
    creds.azure = { accountName: azureAccount, accountKey: azureKey };
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await blobs.getContainerClient(bucket).create();
    await gcs.createBucket(bucket);
    list = {
      s3: async (prefix) => {
        const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
        return (out.Contents ?? []).map((o) => o.Key ?? '');
      },
      azure: async (prefix) => {
        const keys: string[] = [];
        for await (const b of blobs.getContainerClient(bucket).listBlobsFlat({ prefix }))
          keys.push(b.name);
        return keys;
      },
      gcp: async (prefix) => (await gcs.bucket(bucket).getFiles({ prefix }))[0].map((f) => f.name),
    };
    buckets = {
      s3: createS3StoreFactory({ endpoint: s3Endpoint, forcePathStyle: true }),
      azure: createAzureStoreFactory({
        endpointTemplate: emulators.azureEndpointTemplate,
      }),
      gcp: createGcsStoreFactory({ apiEndpoint: gcsEndpoint }),
    };
    input = await startStreamFileServer();
    await generateClip(join(input.dir, 'in.mp4'), {
      seconds: 4,
      width: 320,
      height: 240,
      audio: true,
    });
  });
  after(() => input?.close());

  beforeEach(() => {
    uploads = [];
    beforeUpload = () => undefined;
  });

  describesObjectBucketManifestsWritten();
});

function describesObjectBucketManifestsWritten(): void {
  for (const scheme of ['s3', 'azure', 'gcp'] as const) {
    it(`${scheme}: every object is in the bucket, the manifests written last`, async () => {
      const result = await run(scheme, 'ok/');
      const listed = (await list[scheme]('ok/')).sort();
      expect(listed).to.deep.equal([...uploads].sort());
      expect(listed).to.include.members([
        'ok/master.m3u8',
        'ok/manifest.mpd',
        'ok/240p/index.m3u8',
        'ok/240p/init_0.mp4',
        'ok/240p/seg_00000.m4s',
        'ok/240p/seg_00001.m4s',
        'ok/audio/index.m3u8',
        'ok/thumbnails/poster.jpg',
        'ok/thumbnails/sprite_001.jpg',
        'ok/thumbnails/thumbnails.vtt',
      ]);
      expect(uploads.slice(-2).sort()).to.deep.equal(['ok/manifest.mpd', 'ok/master.m3u8']);
      const firstPlaylist = uploads.findIndex(isPlaylist);
      expect(uploads.slice(firstPlaylist).every(isPlaylist)).to.equal(true);
      expect(result.stream?.objects).to.equal(listed.length);
      expect(result.stream?.manifests.hls).to.equal(`${scheme}://${bucket}/ok/master.m3u8`);
    });

    it(`${scheme}: a failed upload leaves nothing in the bucket`, async () => {
      beforeUpload = (key) => {
        if (key.endsWith('240p/seg_00001.m4s'))
          throw new MediaError('output_rejected', 'refused by the test');
      };
      const error = await run(scheme, 'failed/').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as MediaError).code).to.equal('output_rejected');
      expect(uploads.length).to.be.above(0);
      // What had been uploaded is removed again: nothing of the job is left.
      expect(await list[scheme]('failed/')).to.deep.equal([]);
    });

    it(`${scheme}: a cancel while publishing leaves nothing in the bucket`, async () => {
      const stop = new AbortController();
      beforeUpload = (key) => {
        if (key.endsWith('seg_00001.m4s')) stop.abort(new MediaError('canceled', 'canceled'));
      };
      const error = await run(scheme, 'canceled/', stop.signal).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(Error);
      expect(await list[scheme]('canceled/')).to.deep.equal([]);
    });
  }
}
