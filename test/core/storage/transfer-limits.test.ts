import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MediaError } from '../../../services/core/errors.ts';
import { createGuardedHttp } from '../../../services/core/net/guarded-http.ts';
import { createHttpStore } from '../../../services/core/storage/http-store.ts';
import { withRateFloor } from '../../../services/core/storage/transfer-rate.ts';
import { startSlowServer, type SlowServer } from '../../support/slow-server.ts';

const store = createHttpStore(createGuardedHttp({ allowPrivateNetworks: true }));
let server: SlowServer;
let dir: string;
let source: string;
const uncaught: unknown[] = [];

describe('transfers: aborts never end the process, and a rate floor cuts trickles', function () {
  this.timeout(20_000);
  const onUncaught = (error: unknown): void => void uncaught.push(error);

  before(async () => {
    server = await startSlowServer({ trickleEveryMs: 400, declaredBytes: 1_000_000 });
    dir = await mkdtemp(join(tmpdir(), 'media-transfer-limits-'));
    source = join(dir, 'big.bin');
    // Larger than the socket buffers on both sides, so a server that never reads stalls it.
    await writeFile(source, Buffer.alloc(16 * 1024 * 1024, 7));
    // mocha's own handler would fail the test too; this one lets the test say what went wrong.
    process.prependListener('uncaughtException', onUncaught);
  });
  after(async () => {
    process.removeListener('uncaughtException', onUncaught);
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    uncaught.length = 0;
  });

  describesUploadServerReadsNothing();

  describesUploadSlowerFloorCut();

  describesTransferAboveFloorCut();
});

function describesUploadServerReadsNothing(): void {
  it('an upload to a server that reads nothing, aborted mid-way (job time-out), rejects with the abort reason and throws nothing uncaught', async () => {
    const controller = new AbortController();
    const progress: number[] = [];
    const upload = store.upload(source, `${server.url}/files/out.bin`, {
      signal: controller.signal,
      contentType: 'application/octet-stream',
      onProgress: (n) => void progress.push(n),
    });
    setTimeout(
      () => controller.abort(new MediaError('job_timeout', 'the job ran longer than 500 ms')),
      500,
    );
    const error = await upload.catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).code).to.equal('job_timeout');
    expect(progress.at(-1) ?? 0, 'the upload had started').to.be.above(0);
    expect(progress.at(-1) ?? 0, 'and stalled mid-way').to.be.below(16 * 1024 * 1024);
    // Errors emitted after the rejection (the file stream's) would land here.
    await new Promise((r) => setTimeout(r, 200));
    expect(uncaught).to.deep.equal([]);
  });

  it('the same upload, stopped (no MediaError reason), rejects as interrupted', async () => {
    const controller = new AbortController();
    const upload = store.upload(source, `${server.url}/files/out.bin`, {
      signal: controller.signal,
      contentType: 'application/octet-stream',
    });
    setTimeout(() => controller.abort(), 300);
    const error = await upload.catch((e: unknown) => e);
    expect((error as MediaError).code).to.equal('interrupted');
    await new Promise((r) => setTimeout(r, 200));
    expect(uncaught).to.deep.equal([]);
  });
}

function describesUploadSlowerFloorCut(): void {
  it('an upload slower than the floor is cut with output_unreachable', async () => {
    const floor = { minBytesPerSecond: 64 * 1024 * 1024, windowMs: 600 };
    const started = performance.now();
    const error = await withRateFloor(
      floor,
      'output',
      new AbortController().signal,
      (signal, onBytes) =>
        store.upload(source, `${server.url}/files/out.bin`, {
          signal,
          contentType: 'application/octet-stream',
          onProgress: onBytes,
        }),
    ).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).code).to.equal('output_unreachable');
    expect((error as MediaError).retryable).to.equal(true);
    expect((error as MediaError).message).to.equal(
      'the upload was slower than 67108864 bytes/s over 0.6 s',
    );
    expect(performance.now() - started).to.be.below(3000);
    await new Promise((r) => setTimeout(r, 200));
    expect(uncaught).to.deep.equal([]);
  });

  it('a download trickling one byte at a time (never idle for 30 s) is cut with input_unreachable and leaves no file', async () => {
    const dest = join(dir, 'in.bin');
    const floor = { minBytesPerSecond: 100, windowMs: 1500 };
    const error = await withRateFloor(
      floor,
      'input',
      new AbortController().signal,
      (signal, onBytes) =>
        store.download(`${server.url}/files/in.bin`, dest, {
          signal,
          maxBytes: 10_000_000,
          onProgress: onBytes,
        }),
    ).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).code).to.equal('input_unreachable');
    expect((error as MediaError).message).to.equal(
      'the download was slower than 100 bytes/s over 1.5 s',
    );
    expect(existsSync(dest)).to.equal(false);
  });
}

function describesTransferAboveFloorCut(): void {
  it('a transfer at or above the floor is not cut', async () => {
    const floor = { minBytesPerSecond: 1, windowMs: 300 };
    let moved = 0;
    const result = await withRateFloor(
      floor,
      'input',
      new AbortController().signal,
      async (_signal, onBytes) => {
        for (let i = 1; i <= 5; i++) {
          await new Promise((r) => setTimeout(r, 100));
          moved = i;
          onBytes(i);
        }
        return moved;
      },
    );
    expect(result).to.equal(5);
  });
}
