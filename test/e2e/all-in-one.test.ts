import { expect } from 'chai';
import type { QualityReport } from '../../services/core/contracts/types.generated.ts';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { serveClips } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';
import { ffprobe, generateClip } from '../support/generate-clip.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { fileCallbacks, transcodeBody } from '../support/job-requests.ts';

const API_KEY = 'e2e-test-key-0123456789';
const run = promisify(execFile);

async function post(
  base: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const VMAF_FFMPEG = process.env['TEST_VMAF_FFMPEG'];

async function jobStatus(base: string, id: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}/jobs/${id}`, { headers: { 'x-api-key': API_KEY } });
  return (await res.json()) as Record<string, unknown>;
}

let files: TestServer;
let app: AllInOne;

describe('all-in-one: HTTP → embedded bus → ffmpeg → upload → callback', function () {
  this.timeout(120_000);
  let dataDir: string;

  before(async () => {
    files = await serveClips({
      'input.mp4': { seconds: 4, width: 640, height: 360, audio: true },
    });
    dataDir = await mkdtemp(join(tmpdir(), 'media-e2e-data-'));
    app = await startTestAllInOne(dataDir, {
      API_KEYS: `${API_KEY}:org-e2e`,
      CALLBACK_BACKOFF_MS: '50',
      RETRY_BACKOFF_MS: '50',
      // The quality report's VMAF ffmpeg: the test's, or none (the report then says so).
      VMAF_FFMPEG: VMAF_FFMPEG ?? join(dataDir, 'no-vmaf-ffmpeg'),
    });
  });

  after(async () => {
    await app?.close();
    await files?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  describesTranscodesH264Mp4Requested();

  describesPortraitPhoneVideoComes();

  describesMakesGIFSummaryReports();

  describesMakesMP4SummaryQuality();
});

function describesTranscodesH264Mp4Requested(): void {
  it('transcodes to h264/mp4 at the requested size, uploads it and calls successUrl', async () => {
    const ack = await post(
      app.ingress.url,
      '/transcode',
      transcodeBody(files, 'input.mp4', 'out.mp4', {
        apiKey: API_KEY,
        width: 320,
        ...fileCallbacks(files),
      }),
    );
    expect(ack.status).to.equal(200);
    expect(ack.body['status']).to.equal('queued');
    const id = String(ack.body['id']);
    expect((await jobStatus(app.ingress.url, id))['status']).to.be.oneOf(['queued', 'processing']);

    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    expect(callback.path).to.equal('/callbacks/ok');
    expect(callback.body['status']).to.equal('succeeded');
    expect(callback.headers['webhook-id']).to.equal(`${id}:media.job.succeeded:1`);
    expect(callback.headers['webhook-signature']).to.match(/^v1,/);

    const probed = await ffprobe(join(files.dir, 'out.mp4'));
    expect(probed.format.format_name).to.contain('mp4');
    const video = probed.streams.find((s) => s.codec_type === 'video');
    expect(video?.codec_name).to.equal('h264');
    expect([video?.width, video?.height]).to.deep.equal([320, 180]);
    expect(Number(probed.format.duration)).to.be.closeTo(4, 0.2);
    expect(probed.streams.some((s) => s.codec_type === 'audio' && s.codec_name === 'aac')).to.equal(
      true,
    );

    const status = await jobStatus(app.ingress.url, id);
    expect(status['status']).to.equal('succeeded');
    expect(status['type']).to.equal('transcode');
    expect((status['result'] as Record<string, unknown>)['width']).to.equal(320);

    // The quality report, on by default, in the callback body and the status alike.
    const quality = (callback.body['result'] as { quality: QualityReport }).quality;
    expect(quality.framesCompared).to.equal(100);
    expect(quality.psnr?.mean).to.be.above(25);
    expect(quality.ssim?.mean).to.be.within(0.8, 1);
    if (VMAF_FFMPEG) {
      expect(quality.vmaf?.mean).to.be.within(20, 100);
      expect(quality.missing).to.deep.equal([]);
    } else expect(quality.missing.map((m) => m.metric)).to.deep.equal(['vmaf']);
    expect((status['result'] as { quality: unknown }).quality).to.deep.equal(quality);
  });
}

function describesPortraitPhoneVideoComes(): void {
  it('a portrait phone video comes out upright, and the callback and status say what the service saw', async () => {
    // A phone stores a landscape frame and asks players to turn it (ffmpeg 5.1 writes the tag
    // as a display matrix on a stream copy).
    await generateClip(join(files.dir, 'landscape.mp4'), {
      seconds: 2,
      width: 640,
      height: 360,
      audio: true,
    });
    await run('ffmpeg', [
      ...['-v', 'error', '-i', join(files.dir, 'landscape.mp4'), '-c', 'copy'],
      ...['-metadata:s:v', 'rotate=90', '-y', join(files.dir, 'phone.mp4')],
    ]);
    const ack = await post(
      app.ingress.url,
      '/transcode',
      transcodeBody(files, 'phone.mp4', 'phone-out.mp4', {
        apiKey: API_KEY,
        successUrl: `${files.url}/callbacks/phone`,
      }),
    );
    const id = String(ack.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    const result = callback.body['result'] as Record<string, Record<string, unknown>>;
    expect(result['input']).to.include({ width: 360, height: 640, interlaced: false });
    expect(result['input']?.['rotation']).to.be.oneOf([90, 270]);
    expect(result['output']).to.include({ width: 360, height: 640, rotation: 0, audioChannels: 1 });
    const probed = await ffprobe(join(files.dir, 'phone-out.mp4'));
    const video = probed.streams.find((s) => s.codec_type === 'video');
    expect([video?.width, video?.height]).to.deep.equal([360, 640]);
    const status = await jobStatus(app.ingress.url, id);
    expect((status['result'] as Record<string, unknown>)['input']).to.deep.equal(result['input']);
    // Measured against the input turned upright as the encode turned it: a reference left
    // lying on its side would score far lower (or not compare at all).
    expect((result['quality'] as unknown as QualityReport).psnr?.mean).to.be.above(30);
  });

  it('fails a job whose input is 404 with a failure callback and status failed', async () => {
    const ack = await post(
      app.ingress.url,
      '/transcode',
      transcodeBody(files, 'missing.mp4', 'never.mp4', {
        apiKey: API_KEY,
        bitrateKbps: '2000',
        ...fileCallbacks(files),
      }),
    );
    expect(ack.status).to.equal(200);
    const id = String(ack.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 30_000);
    expect(callback.path).to.equal('/callbacks/fail');
    expect(callback.body['code']).to.equal('input_not_found');
    expect(callback.body['message']).to.be.a('string').and.match(/404/);
    const status = await jobStatus(app.ingress.url, id);
    expect(status['status']).to.equal('failed');
    expect(status['error']).to.deep.include({ code: 'input_not_found' });
  });
}

function describesMakesGIFSummaryReports(): void {
  it('makes a GIF summary and reports the chosen segments', async () => {
    await generateClip(join(files.dir, 'long.mp4'), { seconds: 24, width: 320, height: 240 });
    const ack = await post(app.ingress.url, '/summary/gif', {
      apiKey: API_KEY,
      inputUrl: `${files.url}/files/long.mp4`,
      outputUrl: `${files.url}/files/summary.gif`,
      width: 160,
      successUrl: `${files.url}/callbacks/ok`,
    });
    expect(ack.status).to.equal(200);
    const id = String(ack.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    expect(callback.body['status']).to.equal('succeeded');
    const result = callback.body['result'] as {
      segments: Record<string, unknown>[];
      format: string;
    };
    expect(result.format).to.equal('gif');
    expect(result.segments.length).to.be.at.least(2);
    for (const segment of result.segments)
      expect(segment).to.have.all.keys(
        'startSeconds',
        'endSeconds',
        'durationSeconds',
        'score',
        'sceneIndex',
      );
    const probed = await ffprobe(join(files.dir, 'summary.gif'));
    expect(probed.streams[0]?.codec_name).to.equal('gif');
    expect(probed.streams[0]?.width).to.equal(160);
    const status = await jobStatus(app.ingress.url, id);
    expect(status['type']).to.equal('summary/gif');
    expect((status['result'] as { segments: unknown[] }).segments).to.deep.equal(result.segments);

    // The GIF's quality report: PSNR and SSIM of every frame at its 12 frames/s, VMAF named
    // missing whatever ffmpeg the service has; the status carries the same report.
    const { quality } = callback.body['result'] as { quality: QualityReport };
    const seconds = result.segments.reduce((n, s) => n + Number(s['durationSeconds']), 0);
    expect(quality.framesCompared).to.be.closeTo(seconds * 12, 3);
    expect(quality.psnr?.mean).to.be.above(20);
    expect(quality.ssim?.mean).to.be.within(0.7, 1);
    expect(quality.vmaf).to.equal(undefined);
    expect(quality.missing.map((m) => m.metric)).to.deep.equal(['vmaf']);
    expect(quality.missing[0]?.reason).to.match(/GIF/);
    expect((status['result'] as { quality: unknown }).quality).to.deep.equal(quality);
  });
}

function describesMakesMP4SummaryQuality(): void {
  it('makes an MP4 summary whose quality report is in the callback and GET /jobs/:id alike', async () => {
    await generateClip(join(files.dir, 'long-mp4.mp4'), { seconds: 24, width: 320, height: 240 });
    const ack = await post(app.ingress.url, '/summary/mp4', {
      apiKey: API_KEY,
      inputUrl: `${files.url}/files/long-mp4.mp4`,
      outputUrl: `${files.url}/files/summary.mp4`,
      successUrl: `${files.url}/callbacks/ok`,
      quality: { frames: true },
    });
    expect(ack.status).to.equal(200);
    const id = String(ack.body['id']);
    const callback = await files.waitForCallback((c) => c.body['jobId'] === id, 90_000);
    expect(callback.body['status']).to.equal('succeeded');
    const result = callback.body['result'] as { quality: QualityReport; durationSeconds: number };
    const { quality } = result;
    expect(quality.framesCompared).to.be.closeTo(result.durationSeconds * 25, 3);
    expect(quality.psnr?.mean).to.be.above(25);
    expect(quality.ssim?.mean).to.be.within(0.8, 1);
    if (VMAF_FFMPEG) {
      expect(quality.vmaf?.mean).to.be.within(20, 100);
      expect(quality.missing).to.deep.equal([]);
    } else expect(quality.missing.map((m) => m.metric)).to.deep.equal(['vmaf']);
    expect(quality.framesUrl).to.equal(`${files.url}/files/summary.mp4.quality.json`);
    const frames = JSON.parse(
      await readFile(join(files.dir, 'summary.mp4.quality.json'), 'utf8'),
    ) as { frames: unknown[] };
    expect(frames.frames).to.have.length(quality.framesCompared);
    const status = await jobStatus(app.ingress.url, id);
    expect(status['type']).to.equal('summary/mp4');
    expect((status['result'] as { quality: unknown }).quality).to.deep.equal(quality);
  });
}
