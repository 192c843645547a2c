import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketCorsCommand,
  PutBucketPolicyCommand,
} from '@aws-sdk/client-s3';
import type { Browser, Page } from 'puppeteer-core';
import type { AllInOne } from '../../../services/all-in-one/start-all-in-one.ts';
import { startTestAllInOne } from '../../support/in-process-service.ts';
import { storageEmulators, type StorageEmulators } from '../../support/storage-emulators.ts';
import { startStreamFileServer, type StreamFileServer } from '../../support/stream-file-server.ts';
import {
  contentTypeCase,
  makeClip,
  openPlayer,
  playbackCases,
  playerMounts,
  streamSubmitted,
  type PublishedStream,
} from './stream-playback-fixture.ts';

const API_KEY = 'playback-bucket-key-0123456789';
const PREFIX = 'streams/film/';
/** The host a browser reads a public Cloud Storage object from (path-style). */
const GCS_PUBLIC_HOST = 'storage.googleapis.com';

type Store = 's3' | 'azure' | 'gcp' | 'http';

/** Where a stream is published and how a browser and the test read it back. */
interface Target {
  outputUrl: string;
  outputCreds?: unknown;
  /** The URL of the prefix as a browser reads it, without credentials. */
  playUrl: string;
  /** Each key under the prefix and the content type the store holds for it. */
  stored(): Promise<Record<string, string>>;
}

/** An S3 bucket served as README says: CORS, and objects readable by anyone. */
async function s3Target(e: StorageEmulators, bucket: string): Promise<Target> {
  await e.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const rule = { AllowedOrigins: ['*'], AllowedMethods: ['GET', 'HEAD'], AllowedHeaders: ['*'] };
  await e.s3.send(
    new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [rule] } }),
  );
  const statement = {
    Effect: 'Allow',
    Principal: '*',
    Action: 's3:GetObject',
    Resource: `arn:aws:s3:::${bucket}/*`,
  };
  const policy = JSON.stringify({ Version: '2012-10-17', Statement: [statement] });
  await e.s3.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: policy }));
  return {
    outputUrl: `s3://${bucket}/${PREFIX}`,
    outputCreds: { region: 'us-east-1', accessKeyId: 'test', secretAccessKey: 'test-secret' },
    playUrl: `${e.s3Endpoint}/${bucket}/${PREFIX}`,
    async stored() {
      const listed = await e.s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: PREFIX }));
      const types: Record<string, string> = {};
      for (const { Key: key = '' } of listed.Contents ?? []) {
        const head = await e.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        types[key] = head.ContentType ?? '(none)';
      }
      return types;
    },
  };
}

/** An Azure container whose blobs anyone reads; CORS is a rule of the account's Blob service. */
async function azureTarget(e: StorageEmulators, name: string): Promise<Target> {
  const container = e.blobs.getContainerClient(name);
  await container.create({ access: 'blob' });
  const cors = { allowedOrigins: '*', allowedMethods: 'GET,HEAD', allowedHeaders: '*' };
  await e.blobs.setProperties({ cors: [{ ...cors, exposedHeaders: '*', maxAgeInSeconds: 60 }] });
  return {
    outputUrl: `azure://${name}/${PREFIX}`,
    outputCreds: { accountName: e.azureAccount, accountKey: e.azureKey },
    playUrl: `${container.url}/${PREFIX}`,
    async stored() {
      const types: Record<string, string> = {};
      for await (const blob of container.listBlobsFlat({ prefix: PREFIX }))
        types[blob.name] = blob.properties.contentType ?? '(none)';
      return types;
    },
  };
}

/**
 * A Cloud Storage bucket with a CORS rule, read by the browser at its public path-style URL
 * (http://storage.googleapis.com/bucket/key, which Chromium's host rules send to the emulator).
 * fake-gcs-server answers CORS and reads without credentials for every bucket: the rule is set as
 * on real Cloud Storage, but the emulator does not hold the test to it (nor to a public bucket).
 */
async function gcsTarget(e: StorageEmulators, name: string): Promise<Target> {
  const [bucket] = await e.gcs.createBucket(name);
  await bucket.setCorsConfiguration([
    { origin: ['*'], method: ['GET', 'HEAD'], responseHeader: ['*'], maxAgeSeconds: 60 },
  ]);
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    outputUrl: `gcp://${name}/${PREFIX}`,
    outputCreds: {
      type: 'service_account',
      project_id: 'test-project',
      private_key_id: 'k',
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: 'svc@test-project.iam.gserviceaccount.com',
    },
    playUrl: `http://${GCS_PUBLIC_HOST}/${name}/${PREFIX}`,
    async stored() {
      const [files] = await bucket.getFiles({ prefix: PREFIX });
      return Object.fromEntries(files.map((f) => [f.name, f.metadata.contentType ?? '(none)']));
    },
  };
}

/** A file server taking PUTs, on an origin other than the player page's, with CORS. */
function httpTarget(files: StreamFileServer): Target {
  return {
    outputUrl: `${files.url}/${PREFIX}`,
    playUrl: `${files.url}/${PREFIX}`,
    async stored() {
      const paths = await files.stored(PREFIX);
      return Object.fromEntries(paths.map((p) => [p, files.types.get(p) ?? '(none)']));
    },
  };
}

/**
 * The S3 stream runs the per-title ladder (the default ladder's sizes, 480p, 360p and 240p of the
 * 852x480 clip, at the rates its probe chose, a rung that adds nothing dropped); the other stores
 * take two small rungs: the encode is the same code whatever the store, and three more full
 * ladders would triple the time the test spends encoding.
 */
const SMALL_LADDER = [
  { height: 240, bitrateKbps: 400 },
  { height: 144, bitrateKbps: 200 },
];

describe('streams submitted by POST /streams play in Chromium from each store they were published to', function () {
  this.timeout(120_000);
  const name = `play${Math.random().toString(36).slice(2, 8)}`;
  const targets = {} as Record<Store, Target>;
  const jobs = {} as Record<Store, Promise<PublishedStream>>;
  let pages: StreamFileServer;
  let files: StreamFileServer;
  let app: AllInOne;
  let dataDir: string;
  let browser: Browser;
  let page: Page;

  before(async () => {
    const e = storageEmulators();
    [targets.s3, targets.azure, targets.gcp] = await Promise.all([
      s3Target(e, name),
      azureTarget(e, name),
      gcsTarget(e, name),
    ]);
    pages = await startStreamFileServer({ mounts: playerMounts });
    files = await startStreamFileServer();
    targets.http = httpTarget(files);
    await makeClip(join(pages.dir, 'in.mp4'));
    dataDir = await mkdtemp(join(tmpdir(), 'media-playback-stores-'));
    app = await startTestAllInOne(dataDir, {
      API_KEYS: `${API_KEY}:org-play`,
      S3_ENDPOINT: e.s3Endpoint,
      AZURE_BLOB_ENDPOINT: e.azureEndpointTemplate,
      GCS_API_ENDPOINT: e.gcsEndpoint,
    });
    for (const store of ['s3', 'azure', 'gcp', 'http'] as const) {
      const { outputUrl, outputCreds } = targets[store];
      jobs[store] = streamSubmitted(app, API_KEY, {
        inputUrl: `${pages.url}/in.mp4`,
        outputUrl,
        ...(outputCreds !== undefined && { outputCreds }),
        ladder: store === 's3' ? 'per-title' : SMALL_LADDER,
        segmentSeconds: 2,
        thumbnails: { intervalSeconds: 2 },
        quality: { report: false },
      });
      // Awaited by the store's own suite; a failure there, not an unhandled rejection here.
      jobs[store].catch(() => undefined);
    }
    const gcsHost = new URL(e.gcsEndpoint).host;
    ({ browser, page } = await openPlayer(pages, {
      hostRules: `MAP ${GCS_PUBLIC_HOST} ${gcsHost}`,
    }));
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await Promise.all([pages?.close(), files?.close()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const stores: [Store, string][] = [
    ['s3', 'the S3 emulator (moto)'],
    ['azure', 'Azure Blob (Azurite)'],
    ['gcp', 'Cloud Storage (fake-gcs-server)'],
    ['http', 'a file server (PUT)'],
  ];
  for (const [store, title] of stores)
    describe(`to ${title}`, function () {
      // Four encodes queue on the service: the last waits for the three before it.
      this.timeout(480_000);
      let result: PublishedStream;
      before(async () => {
        result = await jobs[store];
      });

      if (store === 's3') perTitleCase(() => result);

      contentTypeCase(
        () => targets[store].stored(),
        () => result.objects,
      );
      playbackCases(
        () => page,
        () => targets[store].playUrl,
        () => result.rungs,
      );
    });
});

/** The stream's ladder is the per-title one: its probe ran and chose the rungs. */
function perTitleCase(result: () => PublishedStream): void {
  it('the ladder is the per-title one its probe chose', () => {
    const { ladderChoice, rungs } = result();
    expect(ladderChoice?.mode, JSON.stringify(ladderChoice)).to.equal('per-title');
    expect(rungs.length).to.be.within(1, 3);
  });
}
