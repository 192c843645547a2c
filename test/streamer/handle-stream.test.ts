import { expect } from 'chai';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadContracts } from '../../services/core/contracts/load-contracts.ts';
import type {
  JobRequested,
  QualityReport,
  StreamSpec,
} from '../../services/core/contracts/types.generated.ts';
import { MediaError } from '../../services/core/errors.ts';
import type { JobContext } from '../../services/core/worker/job-handler.ts';
import { silentLogger } from '../../services/core/observability/logger.ts';
import { createStreamHandler, ladderCost } from '../../services/streamer/handle-stream.ts';
import { generateClip } from '../support/generate-clip.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { startStreamFileServer, type StreamFileServer } from '../support/stream-file-server.ts';

const contracts = loadContracts();
const isManifest = (p: string): boolean => /\.(m3u8|mpd|vtt)$/.test(p);

function context(signal = new AbortController().signal, progress: number[] = []): JobContext {
  return {
    signal,
    attempt: 1,
    kind: 'stream',
    orgId: 'o',
    span: (_name, work) => work(),
    log: silentLogger,
    progress: (p) => void progress.push(p),
    openSecret: () => undefined,
    waiting: () => undefined,
    begin: () => Promise.resolve(),
  };
}

/**
 * A rung's report: 5 s at 25 frames/s compared frame for frame, a picture close to its input,
 * VMAF when the test has an ffmpeg with libvmaf.
 */
function expectRungQuality(q: QualityReport | undefined): void {
  expect(q?.framesCompared).to.be.within(123, 126);
  expect(q?.psnr?.mean).to.be.above(25);
  expect(q?.ssim?.mean).to.be.within(0.8, 1);
  if (process.env['TEST_VMAF_FFMPEG']) expect(q?.vmaf?.mean).to.be.within(40, 100);
  else expect(q?.missing.map((m) => m.metric)).to.deep.equal(['vmaf']);
}

let input: StreamFileServer;
const handler = createStreamHandler(testMediaJobDeps());
const job = (out: StreamFileServer, spec: StreamSpec = {}): JobRequested => ({
  jobId: '00000000-0000-4000-8000-000000000024',
  kind: 'stream',
  orgId: 'o',
  attempt: 1,
  submittedAt: new Date().toISOString(),
  input: { url: `${input.url}/in.mp4` },
  output: { url: `${out.url}/streams/film/` },
  stream: { segmentSeconds: 2, thumbnails: { intervalSeconds: 2 }, ...spec },
});

describe('stream handler: encode, verify, publish (file server)', function () {
  this.timeout(120_000);

  before(async () => {
    input = await startStreamFileServer();
    await generateClip(join(input.dir, 'in.mp4'), {
      seconds: 5,
      width: 640,
      height: 360,
      audio: true,
      noise: true,
    });
  });
  after(() => input.close());

  describesPublishesObjectPlaylistsAfter();

  describesPerFrameFiguresAsked();

  describesDASHAloneMediaPlaylists();

  describesCancelStoreStillWrites();

  describesCallerLadderAboveInput();

  describesPerTitleLadder();
});

function describesPublishesObjectPlaylistsAfter(): void {
  it('publishes every object, playlists after the media they name and the two manifests last', async () => {
    const out = await startStreamFileServer();
    try {
      const progress: number[] = [];
      const result = await handler(job(out), context(undefined, progress));
      const names = out.uploads.map((p) => p.replace('streams/film/', ''));
      expect(names.slice(-2).sort()).to.deep.equal(['manifest.mpd', 'master.m3u8']);
      const lastMedia = Math.max(...names.map((n, k) => (isManifest(n) ? -1 : k)));
      const firstPlaylist = names.findIndex(isManifest);
      expect(firstPlaylist).to.be.greaterThan(lastMedia);
      // Audio segments follow AAC frames, not the video's keyframes: their count is checked apart.
      expect(names.filter((n) => n.startsWith('audio/seg_')).length).to.be.within(3, 4);
      expect(names.filter((n) => !n.startsWith('audio/seg_')).sort()).to.deep.equal([
        '240p/index.m3u8',
        '240p/init_1.mp4',
        ...['240p/seg_00000.m4s', '240p/seg_00001.m4s', '240p/seg_00002.m4s'],
        '360p/index.m3u8',
        '360p/init_0.mp4',
        ...['360p/seg_00000.m4s', '360p/seg_00001.m4s', '360p/seg_00002.m4s'],
        'audio/index.m3u8',
        'audio/init_2.mp4',
        'manifest.mpd',
        'master.m3u8',
        'thumbnails/poster.jpg',
        'thumbnails/sprite_001.jpg',
        'thumbnails/thumbnails.vtt',
      ]);
      // The success event carries the result as its schema says.
      const event = contracts.events['media.job.succeeded']({
        jobId: job(out).jobId,
        kind: 'stream',
        orgId: 'o',
        attempt: 1,
        finishedAt: new Date().toISOString(),
        result,
      });
      expect(event.ok, event.ok ? '' : event.message).to.equal(true);
      const prefix = `${out.url}/streams/film/`;
      expect(result).to.include({ outputUrl: prefix, format: 'cmaf', width: 640, height: 360 });
      expect(result.stream?.manifests).to.deep.equal({
        hls: `${prefix}master.m3u8`,
        dash: `${prefix}manifest.mpd`,
      });
      expect(result.stream?.rungs.map((r) => [r.name, r.width, r.height])).to.deep.equal([
        ['360p', 640, 360],
        ['240p', 426, 240],
      ]);
      for (const r of result.stream?.rungs ?? []) {
        expect(r.codecs).to.match(/^avc1\.64/);
        expect(r.peakKbps).to.be.at.least(r.averageKbps);
        expect(r.averageKbps).to.be.within(r.targetKbps * 0.6, r.targetKbps * 1.2);
        expectRungQuality(r.quality);
      }
      expect(result.stream?.thumbnails?.trackUrl).to.equal(`${prefix}thumbnails/thumbnails.vtt`);
      expect(result.stream?.objects).to.equal(out.uploads.length);
      expect(result.sizeBytes).to.equal(result.stream?.totalBytes).and.be.above(100_000);
      // Progress covers the encode of the whole ladder and the publishing, in order.
      expect(progress.every((p, k) => k === 0 || p >= (progress[k - 1] ?? 0))).to.equal(true);
      expect(progress.some((p) => p > 5 && p < 85)).to.equal(true);
      expect(progress.at(-1)).to.be.at.least(98);
    } finally {
      await out.close();
    }
  });
}

function describesPerFrameFiguresAsked(): void {
  it('the per-frame figures asked for: a quality.json in each rung folder, published with it and counted in the objects and bytes, not in the rung', async () => {
    const out = await startStreamFileServer();
    try {
      const result = await handler(job(out, { quality: { frames: true } }), context());
      const prefix = `${out.url}/streams/film/`;
      // Published objects under the prefix like any other: in objects, totalBytes, sizeBytes.
      const sizes = await Promise.all(
        out.uploads.map(async (key) => (await stat(join(out.dir, key))).size),
      );
      expect(result.stream?.objects).to.equal(out.uploads.length);
      expect(result.stream?.totalBytes).to.equal(sizes.reduce((a, b) => a + b, 0));
      expect(result.sizeBytes).to.equal(result.stream?.totalBytes);
      for (const r of result.stream?.rungs ?? []) {
        // A rung's sizeBytes is its media alone (init and segments), what a player fetches.
        const media = out.uploads.filter((k) => k.startsWith(`streams/film/${r.name}/`));
        const mediaBytes = await Promise.all(
          media
            .filter((k) => /\.(mp4|m4s)$/.test(k))
            .map(async (k) => (await stat(join(out.dir, k))).size),
        );
        expect(r.sizeBytes).to.equal(mediaBytes.reduce((a, b) => a + b, 0));
        expect(r.quality?.framesUrl).to.equal(`${prefix}${r.name}/quality.json`);
        expect(out.uploads).to.include(`streams/film/${r.name}/quality.json`);
        const file = JSON.parse(
          await readFile(join(out.dir, 'streams/film', r.name, 'quality.json'), 'utf8'),
        ) as { frames: { frame: number; psnrY: number }[] };
        expect(file.frames).to.have.length(r.quality?.framesCompared ?? -1);
      }
      // The files go with the media, before any playlist.
      const firstPlaylist = out.uploads.findIndex(isManifest);
      expect(out.uploads.findLastIndex((n) => n.endsWith('quality.json'))).to.be.below(
        firstPlaylist,
      );
    } finally {
      await out.close();
    }
  });

  it('the quality report switched off: no report on any rung', async () => {
    const out = await startStreamFileServer();
    try {
      const result = await handler(job(out, { quality: { report: false } }), context());
      expect(result.stream?.rungs.map((r) => r.quality)).to.deep.equal([undefined, undefined]);
    } finally {
      await out.close();
    }
  });
}

function describesDASHAloneMediaPlaylists(): void {
  it('DASH alone: no media playlists, one manifest', async () => {
    const out = await startStreamFileServer();
    try {
      const result = await handler(job(out, { formats: ['dash'] }), context());
      expect(out.uploads.filter(isManifest)).to.deep.equal([
        'streams/film/thumbnails/thumbnails.vtt',
        'streams/film/manifest.mpd',
      ]);
      expect(result.stream?.manifests).to.have.keys(['dash']);
    } finally {
      await out.close();
    }
  });

  it('an upload that fails: the job fails, no manifest is ever published and what was uploaded is removed', async () => {
    const out = await startStreamFileServer({
      refuse: (p) => (p.endsWith('240p/seg_00001.m4s') ? 403 : undefined),
    });
    try {
      const error = await handler(job(out), context()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(MediaError);
      expect((error as MediaError).code).to.equal('output_rejected');
      expect(out.uploads.filter(isManifest)).to.deep.equal([]);
      expect(out.uploads.length).to.be.above(0);
      expect(out.deletes).to.include.members(out.uploads);
      expect(await out.stored('streams')).to.deep.equal([]);
    } finally {
      await out.close();
    }
  });

  it('a cancel while publishing: stopped, no manifest published, the objects uploaded removed', async () => {
    const stop = new AbortController();
    const out = await startStreamFileServer({
      refuse: (p) => {
        if (p.includes('seg_00001')) stop.abort(new MediaError('canceled', 'canceled'));
        return undefined;
      },
    });
    try {
      const error = await handler(job(out), context(stop.signal)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(Error);
      expect(out.uploads.filter(isManifest)).to.deep.equal([]);
      expect(out.uploads.length).to.be.below(14);
      expect(await out.stored('streams')).to.deep.equal([]);
    } finally {
      await out.close();
    }
  });
}

function describesCancelStoreStillWrites(): void {
  it('a cancel while the store still writes an upload: removed once its answer came, not after a guess', async () => {
    const stop = new AbortController();
    // The store takes 1.5 s after the body to keep seg_00001 (longer than the second removal
    // pass used to wait): an upload cut on this side would leave it behind.
    const slow = (p: string): boolean => p.endsWith('/seg_00001.m4s');
    const out = await startStreamFileServer({
      // The cancel comes once the store has the whole body and is still writing it.
      holdMs: (p) => {
        if (!slow(p)) return 0;
        stop.abort(new MediaError('canceled', 'canceled'));
        return 1500;
      },
    });
    try {
      const error = await handler(job(out), context(stop.signal)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(MediaError);
      // Whenever the handler returns, the store ends up without the object it was still writing.
      for (const end = Date.now() + 5000; !out.uploads.some(slow) && Date.now() < end;)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(out.uploads.some(slow), 'the slow upload was stored').to.equal(true);
      expect(out.uploads.filter(isManifest)).to.deep.equal([]);
      expect(await out.stored('streams')).to.deep.equal([]);
    } finally {
      await out.close();
    }
  });

  it('a cancel during the encode stops ffmpeg at once: nothing named by a manifest is published', async () => {
    const stop = new AbortController();
    const out = await startStreamFileServer();
    try {
      const ctx = context(stop.signal);
      const started = performance.now();
      let abortedAt = 0;
      ctx.progress = (p, stage) => {
        if (stage === 'encode' && p > 5 && !stop.signal.aborted) {
          abortedAt = performance.now();
          stop.abort(new MediaError('canceled', 'canceled'));
        }
      };
      const error = await handler(job(out, { segmentSeconds: 1 }), ctx).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(Error);
      expect(abortedAt, 'the encode reported progress').to.be.above(0);
      expect(performance.now() - abortedAt).to.be.below(2000);
      expect(performance.now() - started).to.be.below(20_000);
      expect(out.uploads.filter(isManifest)).to.deep.equal([]);
    } finally {
      await out.close();
    }
  });
}

function describesPerTitleLadder(): void {
  it('a per-title ladder: the rates the probe chose, explained in the result, never above the fixed table', async () => {
    const out = await startStreamFileServer();
    try {
      const result = await handler(
        job(out, { ladder: 'per-title', quality: { report: false } }),
        context(),
      );
      const choice = result.stream?.ladderChoice;
      const event = contracts.events['media.job.succeeded']({
        ...{ jobId: job(out).jobId, kind: 'stream', orgId: 'o', attempt: 1 },
        finishedAt: new Date().toISOString(),
        result,
      });
      expect(event.ok, event.ok ? '' : event.message).to.equal(true);
      if (!process.env['TEST_VMAF_FFMPEG']) {
        expect(choice).to.deep.include({ mode: 'fixed' });
        expect(choice?.reason).to.match(/no VMAF/);
        return;
      }
      expect(choice?.mode).to.equal('per-title');
      // The 5 s input is read whole.
      expect(choice?.sample).to.have.length(1);
      expect(choice?.sample?.[0]?.startSeconds).to.equal(0);
      expect(choice?.sample?.[0]?.seconds).to.be.within(4.9, 5.1);
      const kept = (choice?.rungs ?? []).filter((r) => r.kept);
      expect(result.stream?.rungs.map((r) => [r.name, r.targetKbps])).to.deep.equal(
        kept.map((r) => [r.name, r.chosenKbps]),
      );
      for (const r of choice?.rungs ?? []) {
        expect(r.chosenKbps).to.be.within(r.floorKbps, r.fixedKbps);
        expect(r.points.map((p) => p.crf)).to.deep.equal([20, 27]);
        // The noise clip needs more bits at the better quality; each point's rate is the larger
        // of its average and the rate whose VBV holds its peaks.
        const [better, worse] = r.points;
        expect(better?.kbps).to.be.above(worse?.kbps ?? Infinity);
        expect(better?.vmaf).to.be.above(worse?.vmaf ?? 100);
        for (const p of r.points) expect(p.kbps).to.equal(Math.max(p.averageKbps, p.peakKbps));
      }
      for (const r of result.stream?.rungs ?? [])
        expect(r.averageKbps).to.be.within(r.targetKbps * 0.6, r.targetKbps * 1.2);
    } finally {
      await out.close();
    }
  });
}

function describesCallerLadderAboveInput(): void {
  it('a caller ladder above the input is refused before any encode', async () => {
    const out = await startStreamFileServer();
    try {
      const error = await handler(
        job(out, { ladder: [{ height: 720, bitrateKbps: 2000 }] }),
        context(),
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as MediaError).code).to.equal('invalid_request');
      expect(out.uploads).to.deep.equal([]);
    } finally {
      await out.close();
    }
  });

  it('weighs a ladder by the pixels it encodes against its top rung', () => {
    const r = (width: number, height: number) => ({
      name: '',
      width,
      height,
      bitrateKbps: 1,
      maxrateKbps: 1,
      bufsizeKbps: 1,
    });
    expect(
      ladderCost([r(1920, 1080), r(1280, 720), r(852, 480), r(640, 360), r(426, 240)]),
    ).to.equal(1.8);
    expect(ladderCost([r(320, 240)])).to.equal(1);
  });
}
