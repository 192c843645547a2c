// The one test suite every MediaStore adapter passes. Each adapter's test file describes how to
// reach its service (a harness) and calls describeMediaStore; every test gets a bucket of its own.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MediaError } from '../../../services/core/errors.ts';
import type { MediaStore } from '../../../services/core/storage/media-store.ts';

export interface TestBucket {
  /** The location of `key` in this bucket, as a caller would write it. */
  url(key: string): string;
  /** The content type the service stored for `key`, read without the adapter; absent where the emulator does not keep it. */
  contentType?(key: string): Promise<string | undefined>;
  /** Deletes the bucket and everything in it. */
  remove(): Promise<void>;
}

export interface StoreHarness {
  /** A store whose credentials the service accepts. */
  store: MediaStore;
  /** Makes an empty bucket with a random name. */
  createBucket(): Promise<TestBucket>;
  /** A location in a bucket that does not exist. */
  missingBucketUrl(key: string): string;
  /** A store and a location where nothing listens (retries off), for transport failures. */
  unreachable: { store: MediaStore; url: (key: string) => string };
  /**
   * A store with credentials the service refuses, and the secrets that must not show up in
   * any error message. Absent where the emulator does not check credentials.
   */
  wrongCredentials?: { store: MediaStore; secrets: string[] };
  /** Stops whatever the harness started. */
  close?(): Promise<void>;
}

/** An environment variable the test cannot run without: missing is a failure, never a skip. */
export function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '')
    throw new Error(
      `${name} is not set: the test services are not running. Start them with ` +
        '`bash scripts/test-services/start-all.sh FILE` and `source FILE`, or run `npm test`.',
    );
  return value;
}

/** A port on 127.0.0.1 where nothing listens (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A name no other test run will pick: lower-case letters and digits, valid at every provider. */
export function randomName(prefix: string): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function rejection(promise: Promise<unknown>): Promise<MediaError> {
  let result: unknown;
  try {
    result = await promise;
  } catch (error) {
    expect(error, String(error)).to.be.instanceOf(MediaError);
    return error as MediaError;
  }
  throw new Error(`expected a rejection, got ${JSON.stringify(result)}`);
}

const never = new AbortController().signal;
const SIZE = 3 * 1024 * 1024 + 4321;

let harness: StoreHarness;
let dir: string;
let bucket: TestBucket | undefined;
let source: string;
let sourceHash: string;
const dest = (name = 'downloaded.bin'): string => join(dir, name);
const here = (): TestBucket => {
  if (!bucket) throw new Error('no bucket');
  return bucket;
};

/**
 * `checksCredentials`: the store behind the harness refuses wrong credentials (Azurite does;
 * moto and fake-gcs-server accept any). Only then is the refused-credentials test registered:
 * a test that cannot fail is not registered rather than skipped.
 */
export function describeMediaStore(
  title: string,
  setup: () => Promise<StoreHarness>,
  options: { checksCredentials?: boolean } = {},
): void {
  describe(`MediaStore contract: ${title}`, function () {
    this.timeout(30_000);

    before(async () => {
      harness = await setup();
      dir = await mkdtemp(join(tmpdir(), 'media-store-suite-'));
      source = join(dir, 'source.bin');
      await writeFile(source, randomBytes(SIZE));
      sourceHash = await sha256(source);
    });
    after(async () => {
      await harness?.close?.();
      if (dir) await rm(dir, { recursive: true, force: true });
    });
    beforeEach(async () => {
      bucket = await harness.createBucket();
    });
    afterEach(async () => {
      await bucket?.remove();
      bucket = undefined;
      await rm(dest(), { force: true });
    });

    describesUploads3MiBFile();

    describesRejectsObjectLargerMaxBytes();

    if (options.checksCredentials)
      it('rejects refused credentials with *_rejected, the secrets in no message', async function () {
        const wrong = harness.wrongCredentials;
        if (!wrong)
          throw new Error('a store that checks credentials needs wrongCredentials in its harness');
        const url = here().url('secret.bin');
        await harness.store.upload(source, url, {
          signal: never,
          contentType: 'application/octet-stream',
        });
        const down = await rejection(
          wrong.store.download(url, dest(), { signal: never, maxBytes: SIZE }),
        );
        const up = await rejection(
          wrong.store.upload(source, url, { signal: never, contentType: 'video/mp4' }),
        );
        expect([down.code, down.retryable, up.code, up.retryable]).to.deep.equal([
          'input_rejected',
          false,
          'output_rejected',
          false,
        ]);
        for (const error of [down, up])
          for (const secret of wrong.secrets) expect(error.message).not.to.include(secret);
        expect(existsSync(dest())).to.equal(false);
      });

    describesRejectsOnceSignalAlready();
  });
}

function describesUploads3MiBFile(): void {
  it('uploads a 3 MiB file and downloads the same bytes, reporting progress up to the size', async () => {
    const url = here().url('clips/in put.bin');
    const upProgress: number[] = [];
    const up = await harness.store.upload(source, url, {
      signal: never,
      contentType: 'video/mp4',
      onProgress: (n) => upProgress.push(n),
    });
    expect(up.bytes).to.equal(SIZE);
    expect(upProgress.at(-1)).to.equal(SIZE);
    if (here().contentType)
      expect(await here().contentType?.('clips/in put.bin')).to.equal('video/mp4');

    const downProgress: number[] = [];
    const down = await harness.store.download(url, dest(), {
      signal: never,
      maxBytes: SIZE,
      onProgress: (n) => downProgress.push(n),
    });
    expect(down.bytes).to.equal(SIZE);
    expect(await sha256(dest())).to.equal(sourceHash);
    expect(downProgress.at(-1)).to.equal(SIZE);
    expect([...downProgress].sort((a, b) => a - b)).to.deep.equal(downProgress);
  });

  it('overwrites an object at the same location (uploads are idempotent)', async () => {
    const url = here().url('out.mp4');
    const smaller = join(dir, 'smaller.bin');
    await writeFile(smaller, randomBytes(100_000));
    await harness.store.upload(source, url, { signal: never, contentType: 'video/mp4' });
    await harness.store.upload(smaller, url, { signal: never, contentType: 'video/webm' });
    await harness.store.upload(smaller, url, { signal: never, contentType: 'video/webm' });
    await harness.store.download(url, dest(), { signal: never, maxBytes: SIZE });
    expect(await sha256(dest())).to.equal(await sha256(smaller));
    if (here().contentType) expect(await here().contentType?.('out.mp4')).to.equal('video/webm');
  });

  it('rejects a missing object with input_not_found and writes no file', async () => {
    const error = await rejection(
      harness.store.download(here().url('nothing/here.mp4'), dest(), {
        signal: never,
        maxBytes: SIZE,
      }),
    );
    expect(error.code).to.equal('input_not_found');
    expect(error.retryable).to.equal(false);
    expect(existsSync(dest())).to.equal(false);
  });
}

function describesRejectsObjectLargerMaxBytes(): void {
  it('rejects an object larger than maxBytes with input_too_large and leaves no file', async () => {
    const url = here().url('big.bin');
    await harness.store.upload(source, url, {
      signal: never,
      contentType: 'application/octet-stream',
    });
    const error = await rejection(
      harness.store.download(url, dest(), { signal: never, maxBytes: SIZE - 1 }),
    );
    expect(error.code).to.equal('input_too_large');
    expect(existsSync(dest())).to.equal(false);
  });

  it('rejects an upload into a bucket that does not exist with output_rejected', async () => {
    const error = await rejection(
      harness.store.upload(source, harness.missingBucketUrl('x.mp4'), {
        signal: never,
        contentType: 'video/mp4',
      }),
    );
    expect(error.code).to.equal('output_rejected');
  });

  it('rejects with *_unreachable (retryable) when the service cannot be reached', async () => {
    const { store, url } = harness.unreachable;
    const down = await rejection(
      store.download(url('a.mp4'), dest(), { signal: never, maxBytes: SIZE }),
    );
    expect([down.code, down.retryable]).to.deep.equal(['input_unreachable', true]);
    const up = await rejection(
      store.upload(source, url('a.mp4'), { signal: never, contentType: 'video/mp4' }),
    );
    expect([up.code, up.retryable]).to.deep.equal(['output_unreachable', true]);
  });
}

function describesRejectsOnceSignalAlready(): void {
  it('rejects at once when the signal is already aborted, moving nothing', async () => {
    const url = here().url('aborted.mp4');
    const stopped = AbortSignal.abort(new MediaError('interrupted', 'stopped by the test'));
    await rejection(
      harness.store.upload(source, url, { signal: stopped, contentType: 'video/mp4' }),
    );
    const error = await rejection(
      harness.store.download(url, dest(), { signal: never, maxBytes: SIZE }),
    );
    expect(error.code).to.equal('input_not_found');

    await harness.store.upload(source, url, { signal: never, contentType: 'video/mp4' });
    await rejection(harness.store.download(url, dest(), { signal: stopped, maxBytes: SIZE }));
    expect(existsSync(dest())).to.equal(false);
  });

  it('stops a download when the signal aborts midway', async () => {
    const url = here().url('midway.mp4');
    await harness.store.upload(source, url, { signal: never, contentType: 'video/mp4' });
    const controller = new AbortController();
    const seen: number[] = [];
    const onProgress = (n: number): void => {
      seen.push(n);
      controller.abort(new MediaError('interrupted', 'stopped by the test'));
    };
    await rejection(
      harness.store.download(url, dest(), {
        signal: controller.signal,
        maxBytes: SIZE,
        onProgress,
      }),
    );
    expect(seen[0]).to.be.below(SIZE);
    // A file left behind, if any, is not the whole object.
    if (existsSync(dest())) expect((await stat(dest())).size).to.be.below(SIZE);
  });
}
