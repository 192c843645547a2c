// Smoke test of the real test services that scripts/test-services/start-all.sh starts:
// each one is reachable and answers like the real thing. A missing TEST_* variable is a
// failure, not a skip: run through `npm test`, or source the env file start-all.sh wrote.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import kafkajs from 'kafkajs';

const run = promisify(execFile);

const VARIABLES = [
  'TEST_KAFKA_BROKERS',
  'TEST_KAFKA_CTL',
  'TEST_SERVICES_STATE_DIR',
  'TEST_S3_ENDPOINT',
  'TEST_AZURE_BLOB_ENDPOINT',
  'TEST_AZURE_ACCOUNT',
  'TEST_AZURE_KEY',
  'TEST_GCS_ENDPOINT',
  'TEST_FFMPEG',
  'TEST_FONT_FILE',
  'TEST_VMAF_FFMPEG',
  'TEST_CORPUS_SOURCES',
] as const;
type Variable = (typeof VARIABLES)[number];

function env(name: Variable): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(
      `${name} is not set: the test services are not running. Run the tests with \`npm test\` ` +
        '(scripts/test-all.sh), or start them with `bash scripts/test-services/start-all.sh FILE` ' +
        'and `source FILE` first.',
    );
  }
  return value;
}

// Shared Key signature of a request without body, as Azure Storage defines it.
function azureSharedKey(
  method: string,
  url: URL,
  headers: Record<string, string>,
  account: string,
  key: string,
): string {
  const msHeaders = Object.keys(headers)
    .filter((h) => h.startsWith('x-ms-'))
    .sort()
    .map((h) => `${h}:${headers[h]}\n`)
    .join('');
  const params = [...url.searchParams.keys()]
    .sort()
    .map((k) => `\n${k}:${url.searchParams.get(k)}`);
  const resource = `/${account}${url.pathname}${params.join('')}`;
  const stringToSign =
    [method, '', '', '', '', '', '', '', '', '', '', ''].join('\n') + '\n' + msHeaders + resource;
  const signature = createHmac('sha256', Buffer.from(key, 'base64'))
    .update(stringToSign, 'utf8')
    .digest('base64');
  return `SharedKey ${account}:${signature}`;
}

describe('test services (scripts/test-services)', function () {
  this.timeout(30_000);

  describesHasTESTVariableSet();

  describesFfmpegRunsDrawsText();
});

function describesHasTESTVariableSet(): void {
  it('has every TEST_* variable set', () => {
    const missing = VARIABLES.filter((name) => !process.env[name]);
    expect(
      missing,
      `missing: ${missing.join(', ')} (run through npm test, or source start-all.sh's env file)`,
    ).to.deep.equal([]);
  });

  it('Kafka answers an admin describeCluster()', async () => {
    const brokers = env('TEST_KAFKA_BROKERS').split(',');
    const kafka = new kafkajs.Kafka({
      clientId: 'test-services-smoke',
      brokers,
      logLevel: kafkajs.logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const cluster = await admin.describeCluster();
      expect(cluster.brokers).to.have.length(1);
      expect(`${cluster.brokers[0]?.host}:${cluster.brokers[0]?.port}`).to.equal(brokers[0]);
      expect(cluster.controller).to.equal(1);
    } finally {
      await admin.disconnect();
    }
  });

  it('S3 (moto) lists buckets', async () => {
    const res = await fetch(`${env('TEST_S3_ENDPOINT')}/`);
    expect(res.status).to.equal(200);
    expect(await res.text()).to.contain('ListAllMyBucketsResult');
  });

  it('GCS (fake-gcs-server) is healthy and lists buckets', async () => {
    const endpoint = env('TEST_GCS_ENDPOINT');
    const health = await fetch(`${endpoint}/_internal/healthcheck`);
    expect(health.status).to.equal(200);
    const list = await fetch(`${endpoint}/storage/v1/b?project=test-project`);
    expect(list.status).to.equal(200);
    expect(await list.json()).to.have.property('kind', 'storage#buckets');
  });

  it('Azure Blob (Azurite) accepts the dev account key', async () => {
    const account = env('TEST_AZURE_ACCOUNT');
    const url = new URL(`${env('TEST_AZURE_BLOB_ENDPOINT')}?comp=list`);
    const headers: Record<string, string> = {
      'x-ms-date': new Date().toUTCString(),
      'x-ms-version': '2021-08-06',
    };
    headers.authorization = azureSharedKey('GET', url, headers, account, env('TEST_AZURE_KEY'));
    const res = await fetch(url, { headers });
    const body = await res.text();
    expect(res.status, body).to.equal(200);
    expect(body).to.contain('EnumerationResults');
  });
}

function describesFfmpegRunsDrawsText(): void {
  it('ffmpeg runs and draws text with the test font', async () => {
    const ffmpeg = env('TEST_FFMPEG');
    const font = env('TEST_FONT_FILE');
    expect(existsSync(font), font).to.equal(true);
    const { stdout } = await run(ffmpeg, ['-hide_banner', '-version']);
    expect(stdout).to.match(/^ffmpeg version /);
    await run(ffmpeg, [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      'color=c=black:s=64x64:d=0.1',
      '-vf',
      `drawtext=fontfile=${font}:text=ok:fontcolor=white`,
      '-frames:v',
      '1',
      '-f',
      'null',
      '-',
    ]);
  });

  it('the VMAF ffmpeg scores a clip against itself at about 100, and the corpus sources are there', async () => {
    const log = join(await mkdtemp(join(tmpdir(), 'media-vmaf-')), 'vmaf.json');
    const clip = join(env('TEST_CORPUS_SOURCES'), 'clips/carphone_pristine.mp4');
    await run(env('TEST_VMAF_FFMPEG'), [
      ...['-hide_banner', '-loglevel', 'error', '-i', clip, '-i', clip, '-frames:v', '10'],
      ...['-lavfi', `[0:v][1:v]libvmaf=log_fmt=json:log_path=${log}`, '-f', 'null', '-'],
    ]);
    const scores = JSON.parse(await readFile(log, 'utf8')) as {
      pooled_metrics: { vmaf: { mean: number } };
    };
    expect(scores.pooled_metrics.vmaf.mean).to.be.greaterThan(95);
    await rm(dirname(log), { recursive: true, force: true });
  });
}
