import { expect } from 'chai';
import { copyFile, readdir, readFile, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { JobRequested } from '../../services/core/contracts/types.generated.ts';
import { createStreamHandler } from '../../services/streamer/handle-stream.ts';
import type { LadderEncoder } from '../../services/streamer/ladder.ts';
import { colourTagProblems, toneMapProblems } from '../support/documented-output.ts';
import {
  displayedSize,
  interlaceVerdict,
  markerTopLeft,
  pictureStats,
  probe,
} from '../support/media-checks.ts';
import { testJobContext } from '../support/job-context.ts';
import { testMediaJobDeps } from '../support/media-job-deps.ts';
import { startStreamFileServer, type StreamFileServer } from '../support/stream-file-server.ts';
import { cachedUploadCorpus, type UploadCase } from '../support/upload-corpus.ts';

// Issue 41: a portrait phone video, HDR clips (PQ, and HLG stored on its side) and an interlaced
// broadcast clip of the upload corpus come out upright, tone-mapped and deinterlaced in every
// rung of the stream (the ladder's picture is made once, before the split to
// the rungs' encoders: build-ladder-args.ts). Each rung is read back as its init segment and
// media segments joined, as a player appends them.

const CASES = ['phone-portrait-90', 'hdr10-pq-hevc', 'hlg-hevc-portrait-90', 'broadcast-h264-tff'];
/**
 * H.264 on every case; VP9 (5-15 s a job here) on the portrait HLG clip only: the picture is made
 * once for all encoders, so what VP9 adds is its own tags and pixel format.
 */
const ENCODERS: Record<string, LadderEncoder[]> = { 'hlg-hevc-portrait-90': ['h264', 'vp9'] };

const run = promisify(execFile);
const FFMPEG = process.env['TEST_FFMPEG'] ?? 'ffmpeg';
const handler = createStreamHandler(testMediaJobDeps());

let files: StreamFileServer;
let cases: UploadCase[] = [];
let corpus = '';
let jobs = 0;

describe('stream rungs of phone, HDR and interlaced uploads: upright, tone-mapped, deinterlaced', function () {
  this.timeout(180_000);

  before(async function () {
    this.timeout(300_000);
    files = await startStreamFileServer();
    ({ dir: corpus, cases } = await cachedUploadCorpus(CASES));
    for (const c of cases) await copyFile(join(corpus, c.file), join(files.dir, c.file));
  });
  after(() => files?.close());

  for (const name of CASES)
    for (const encoder of ENCODERS[name] ?? ['h264'])
      it(`${name} in ${encoder}: every rung`, async () => {
        const c = caseNamed(name);
        const prefix = `streams/${name}-${encoder}/`;
        const stream = (await handler(streamJob(c, encoder, prefix), testJobContext('stream')))
          .stream;
        expect(stream?.rungs.length).to.be.at.least(2);
        const problems: string[] = [];
        for (const rung of stream?.rungs ?? []) {
          const path = await joinedRung(join(files.dir, prefix, rung.name));
          for (const p of await pictureProblems(c, path, rung)) problems.push(`${rung.name}: ${p}`);
        }
        expect(problems).to.deep.equal([]);
      });

  // A check that cannot fail proves nothing: each fails on a picture made wrong on purpose.
  it('the checks fail on HDR colours cut to 8 bits as they are, and on woven fields', async () => {
    const hdr = caseNamed('hdr10-pq-hevc');
    const truncated = join(files.dir, 'hdr-truncated.mp4');
    await run(FFMPEG, [
      ...['-v', 'error', '-y', '-i', join(corpus, hdr.file), '-an', '-vf', 'format=yuv420p'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '12'],
      ...['-color_primaries', 'bt709', '-color_trc', 'bt709', '-colorspace', 'bt709', truncated],
    ]);
    const size = (c: UploadCase) => ({
      width: c.expect.displayWidth,
      height: c.expect.displayHeight,
    });
    expect((await pictureProblems(hdr, truncated, size(hdr))).join('; ')).to.match(/saturation/);
    const woven = caseNamed('broadcast-h264-tff');
    const judged = await pictureProblems(woven, join(corpus, woven.file), size(woven));
    expect(judged.join('; ')).to.match(/idet/);
  });
});

function caseNamed(name: string): UploadCase {
  const c = cases.find((x) => x.name === name);
  if (!c) throw new Error(`${name} is not in the corpus`);
  return c;
}

function streamJob(c: UploadCase, encoder: LadderEncoder, prefix: string): JobRequested {
  return {
    jobId: `00000000-0000-4000-8000-${String(++jobs).padStart(12, '0')}`,
    kind: 'stream',
    orgId: 'o',
    attempt: 1,
    submittedAt: new Date().toISOString(),
    input: { url: `${files.url}/${c.file}` },
    output: { url: `${files.url}/${prefix}` },
    stream: {
      encoder,
      formats: encoder === 'vp9' ? ['dash'] : ['hls', 'dash'],
      segmentSeconds: 2,
      quality: { report: false },
    },
  };
}

/** What is wrong with one rung's picture (a file): its size, orientation, colour and scan. */
async function pictureProblems(
  c: UploadCase,
  path: string,
  rung: { width: number; height: number },
): Promise<string[]> {
  const probed = await probe(path);
  const shown = displayedSize(probed);
  const problems: string[] = [];
  const aspect = c.expect.displayWidth / c.expect.displayHeight;
  if (shown.width !== rung.width || shown.height !== rung.height)
    problems.push(`shown ${shown.width}x${shown.height}, result says ${rung.width}x${rung.height}`);
  if (Math.abs(shown.width / shown.height / aspect - 1) > 0.02)
    problems.push(
      `aspect ${shown.width}x${shown.height}, not that of ${c.expect.displayWidth}x${c.expect.displayHeight}`,
    );
  const marker = await markerTopLeft(path);
  if (!marker.ok) problems.push(`marker not top-left: ${JSON.stringify(marker.corners)}`);
  problems.push(...colourTagProblems(probed));
  if (c.sdrReference) {
    const [out, reference] = await Promise.all([pictureStats(path), pictureStats(c.sdrReference)]);
    problems.push(...toneMapProblems(out, reference));
  }
  if (c.expect.interlaced) {
    const v = await interlaceVerdict(path);
    const combed = v.tff + v.bff;
    if (combed > 0.1 * (combed + v.progressive))
      problems.push(`idet: ${combed} interlaced, ${v.progressive} progressive frames`);
  }
  return problems;
}

/** A rung folder's init segment and media segments joined into one fragmented MP4. */
async function joinedRung(folder: string): Promise<string> {
  const names = await readdir(folder);
  const init = names.filter((f) => /^init.*\.mp4$/.test(f));
  const segments = names.filter((f) => f.endsWith('.m4s')).sort();
  if (init.length !== 1 || segments.length === 0)
    throw new Error(`not one init segment and media segments in ${folder}: ${names.join(', ')}`);
  const parts = await Promise.all([...init, ...segments].map((f) => readFile(join(folder, f))));
  const path = `${folder}.joined.mp4`;
  await writeFile(path, Buffer.concat(parts));
  return path;
}
