import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { QualityReport } from '../../services/core/contracts/types.generated.ts';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { generateClip } from '../support/generate-clip.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import { startStreamFileServer, type StreamFileServer } from '../support/stream-file-server.ts';

const API_KEY = 'e2e-stream-key-0123456789';
const VMAF_FFMPEG = process.env['TEST_VMAF_FFMPEG'];

let hooks: TestServer;
let files: StreamFileServer;
let app: AllInOne;

describe('all-in-one: POST /streams → streamer → published ladder → status and callback', function () {
  this.timeout(120_000);
  let dataDir: string;

  before(async () => {
    hooks = await startTestServer();
    files = await startStreamFileServer();
    await generateClip(join(files.dir, 'in.mp4'), {
      seconds: 4,
      width: 640,
      height: 360,
      audio: true,
    });
    dataDir = await mkdtemp(join(tmpdir(), 'media-e2e-stream-'));
    app = await startTestAllInOne(dataDir, {
      API_KEYS: `${API_KEY}:org-e2e`,
      // The quality report's VMAF ffmpeg: the test's, or none (the report then says so).
      VMAF_FFMPEG: VMAF_FFMPEG ?? join(dataDir, 'no-vmaf-ffmpeg'),
    });
  });
  after(async () => {
    await app?.close();
    await hooks?.close();
    await files?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  describesCallbackGETJobsId();
});

function describesCallbackGETJobsId(): void {
  it('the callback and GET /jobs/:id carry the manifest URLs, rungs and their quality, thumbnails and totals', async () => {
    const prefix = `${files.url}/out/film/`;
    const res = await fetch(`${app.ingress.url}/streams`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiKey: API_KEY,
        inputUrl: `${files.url}/in.mp4`,
        outputUrl: prefix,
        segmentSeconds: 2,
        thumbnails: {},
        quality: { frames: true },
        successUrl: `${hooks.url}/callbacks/ok`,
        failureUrl: `${hooks.url}/callbacks/fail`,
      }),
    });
    expect(res.status).to.equal(200);
    const { id } = (await res.json()) as { id: string };
    const callback = await hooks.waitForCallback((c) => c.body['jobId'] === id, 100_000);
    expect(callback.path).to.equal('/callbacks/ok');
    expect(callback.body).to.include({ kind: 'stream', status: 'succeeded' });
    const result = callback.body['result'] as {
      stream: {
        manifests: { hls: string; dash: string };
        rungs: { name: string; quality: QualityReport }[];
        thumbnails: { trackUrl: string };
        totalBytes: number;
      };
    };
    expect(result.stream.manifests).to.deep.equal({
      hls: `${prefix}master.m3u8`,
      dash: `${prefix}manifest.mpd`,
    });
    expect(result.stream.rungs.map((r) => r.name)).to.deep.equal(['360p', '240p']);
    expect(result.stream.thumbnails.trackUrl).to.equal(`${prefix}thumbnails/thumbnails.vtt`);
    const master = await readFile(join(files.dir, 'out/film/master.m3u8'), 'utf8');
    expect(master).to.contain('360p/index.m3u8');
    const status = (await (
      await fetch(`${app.ingress.url}/jobs/${id}`, { headers: { 'x-api-key': API_KEY } })
    ).json()) as Record<string, unknown>;
    expect(status).to.include({ type: 'stream', status: 'succeeded', progressPercent: 100 });
    expect(status['result']).to.deep.equal(callback.body['result']);

    // Each rung's quality report (one metrics run for the ladder): every frame of the 4 s at
    // 25 frames/s, its per-frame file in the rung's folder, the same report in the status.
    const statusRungs = (status['result'] as typeof result).stream.rungs;
    for (const [k, rung] of result.stream.rungs.entries()) {
      const q = rung.quality;
      expect(q.framesCompared).to.equal(100);
      expect(q.psnr?.mean).to.be.above(25);
      expect(q.ssim?.mean).to.be.within(0.8, 1);
      if (VMAF_FFMPEG) {
        expect(q.vmaf?.mean).to.be.within(20, 100);
        expect(q.missing).to.deep.equal([]);
      } else expect(q.missing.map((m) => m.metric)).to.deep.equal(['vmaf']);
      expect(q.framesUrl).to.equal(`${prefix}${rung.name}/quality.json`);
      const file = JSON.parse(
        await readFile(join(files.dir, 'out/film', rung.name, 'quality.json'), 'utf8'),
      ) as { frames: unknown[] };
      expect(file.frames).to.have.length(100);
      expect(statusRungs[k]?.quality).to.deep.equal(q);
    }
    expect(result.stream.rungs[0]?.quality).to.not.deep.equal(result.stream.rungs[1]?.quality);
  });
}
