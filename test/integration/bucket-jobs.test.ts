import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { BlobServiceClient } from '@azure/storage-blob';
import type { Storage } from '@google-cloud/storage';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { ffprobe, generateClip } from '../support/generate-clip.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { storageEmulators } from '../support/storage-emulators.ts';
import { createReadStream, createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';

const KEY = 'bucket-jobs-key-0123456789';

// Read in before(): a missing variable then fails this suite, not the whole run.
let azureAccount: string, azureKey: string;
const suffix = Math.random().toString(36).slice(2, 8);
const s3Bucket = `in-${suffix}`;
const container = `out-${suffix}`;
const gcsBucket = `gcs-${suffix}`;
const awsCreds = {
  region: 'us-east-1',
  accessKeyId: 'test',
  secretAccessKey: 'test-secret-value',
};
let azureCreds: { accountName: string; accountKey: string };
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const gcpCreds = {
  type: 'service_account',
  project_id: 'test-project',
  private_key_id: 'k',
  private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  client_email: 'svc@test-project.iam.gserviceaccount.com',
};
let files: TestServer;
let app: AllInOne;
let workDir: string;
let s3: S3Client;
let blobs: BlobServiceClient;
let gcs: Storage;
async function run(
  body: Record<string, unknown>,
  path = '/transcode',
): Promise<Record<string, unknown>> {
  const res = await fetch(`${app.ingress.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      apiKey: KEY,
      successUrl: `${files.url}/callbacks/ok`,
      failureUrl: `${files.url}/callbacks/fail`,
      ...body,
    }),
  });
  expect(res.status).to.equal(200);
  const { id } = (await res.json()) as { id: string };
  return (await files.waitForCallback((c) => c.body['jobId'] === id, 120_000)).body;
}

describe('all-in-one jobs between buckets (S3, Azure, GCS emulators) with per-request credentials', function () {
  this.timeout(180_000);
  let dataDir: string;

  before(async () => {
    const emulators = storageEmulators();
    ({ azureAccount, azureKey, s3, blobs, gcs } = emulators);
    azureCreds = { accountName: azureAccount, accountKey: azureKey };
    files = await startTestServer();
    workDir = await mkdtemp(join(tmpdir(), 'media-buckets-'));
    dataDir = join(workDir, 'data');
    const clip = join(workDir, 'in.mp4');
    await generateClip(clip, { seconds: 2, width: 320, height: 240, audio: true });
    await s3.send(new CreateBucketCommand({ Bucket: s3Bucket }));
    const { Upload } = await import('@aws-sdk/lib-storage');
    await new Upload({
      client: s3,
      params: { Bucket: s3Bucket, Key: 'videos/in.mp4', Body: createReadStream(clip) },
    }).done();
    await blobs.getContainerClient(container).create();
    await gcs.createBucket(gcsBucket);
    app = await startTestAllInOne(dataDir, {
      API_KEYS: `${KEY}:org-b`,
      S3_ENDPOINT: emulators.s3Endpoint,
      AZURE_BLOB_ENDPOINT: emulators.azureEndpointTemplate,
      GCS_API_ENDPOINT: emulators.gcsEndpoint,
    });
  });
  after(async () => {
    await app?.close();
    await files?.close();
    await blobs
      ?.getContainerClient(container)
      .deleteIfExists()
      .catch(() => undefined);
    await rm(workDir, { recursive: true, force: true });
  });

  describesS3InAzureOutTranscoded();

  describesGcpInS3OutWebm();
});

function describesS3InAzureOutTranscoded(): void {
  it('s3:// in, azure:// out: transcoded, uploaded with the output credentials, verified', async () => {
    const done = await run({
      inputUrl: `s3://${s3Bucket}/videos/in.mp4`,
      inputCreds: awsCreds,
      outputUrl: `azure://${container}/out/h265.mp4`,
      outputCreds: azureCreds,
      encoder: 'h265',
      container: 'mp4',
      bitrateKbps: '1000',
    });
    expect(done['status'], JSON.stringify(done)).to.equal('succeeded');
    const local = join(workDir, 'from-azure.mp4');
    await blobs.getContainerClient(container).getBlobClient('out/h265.mp4').downloadToFile(local);
    const video = (await ffprobe(local)).streams.find((s) => s.codec_type === 'video');
    expect(video?.codec_name).to.equal('hevc');
    expect(video?.codec_tag_string).to.equal('hvc1');
  });

  it('s3:// in, gcp:// out as a GIF summary', async () => {
    const done = await run(
      {
        inputUrl: `s3://${s3Bucket}/videos/in.mp4`,
        inputCreds: awsCreds,
        outputUrl: `gcp://${gcsBucket}/summaries/in.gif`,
        outputCreds: gcpCreds,
        width: 120,
      },
      '/summary/gif',
    );
    expect(done['status'], JSON.stringify(done)).to.equal('succeeded');
    const local = join(workDir, 'from-gcs.gif');
    await gcs.bucket(gcsBucket).file('summaries/in.gif').download({ destination: local });
    expect((await ffprobe(local)).streams[0]?.codec_name).to.equal('gif');
  });
}

function describesGcpInS3OutWebm(): void {
  it('gcp:// in, s3:// out as webm; then a missing object fails with input_not_found', async () => {
    const done = await run({
      inputUrl: `gcp://${gcsBucket}/summaries/in.gif`,
      inputCreds: gcpCreds,
      outputUrl: `s3://${s3Bucket}/out/from-gif.webm`,
      outputCreds: awsCreds,
      encoder: 'vp9',
      container: 'webm',
      bitrateKbps: '1000',
    });
    expect(done['status'], JSON.stringify(done)).to.equal('succeeded');
    const object = await s3.send(
      new GetObjectCommand({ Bucket: s3Bucket, Key: 'out/from-gif.webm' }),
    );
    const local = join(workDir, 'from-s3.webm');
    await pipeline(object.Body as Readable, createWriteStream(local));
    expect((await ffprobe(local)).streams[0]?.codec_name).to.equal('vp9');

    const missing = await run({
      inputUrl: `s3://${s3Bucket}/videos/nope.mp4`,
      inputCreds: awsCreds,
      outputUrl: `s3://${s3Bucket}/out/x.mp4`,
      outputCreds: awsCreds,
      encoder: 'h264',
      container: 'mp4',
      bitrateKbps: '1000',
    });
    expect(missing).to.include({ status: 'failed', code: 'input_not_found' });
  });

  it('wrong Azure key: the job fails as output_rejected and the message carries no secret', async () => {
    const done = await run({
      inputUrl: `s3://${s3Bucket}/videos/in.mp4`,
      inputCreds: awsCreds,
      outputUrl: `azure://${container}/out/denied.mp4`,
      outputCreds: {
        accountName: azureAccount,
        accountKey: Buffer.from('wrong-key').toString('base64'),
      },
      encoder: 'h264',
      container: 'mp4',
      bitrateKbps: '1000',
    });
    expect(done).to.include({ status: 'failed', code: 'output_rejected' });
    expect(String(done['message'])).not.to.contain(azureKey);
  });
}
