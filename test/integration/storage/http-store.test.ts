// http(s):// file servers, against a small in-memory server started here: GET reads, PUT
// writes, the first path segment plays the bucket. Plain file servers take no credentials,
// so refused credentials are not part of this run.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MediaError } from '../../../services/core/errors.ts';
import { createGuardedHttp } from '../../../services/core/net/guarded-http.ts';
import { createHttpStore } from '../../../services/core/storage/http-store.ts';
import {
  closedPort,
  describeMediaStore,
  randomName,
  type StoreHarness,
} from './media-store-suite.ts';

interface StoredObject {
  body: Buffer;
  contentType: string | undefined;
}

interface MemoryServer {
  base: string;
  buckets: Map<string, Map<string, StoredObject>>;
  close(): Promise<void>;
}

async function startMemoryServer(): Promise<MemoryServer> {
  const buckets = new Map<string, Map<string, StoredObject>>();
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const slash = path.indexOf('/', 1);
    const bucket = slash > 0 ? buckets.get(path.slice(1, slash)) : undefined;
    const key = decodeURIComponent(path.slice(slash + 1));
    if (!bucket) return void res.writeHead(404).end('no such bucket');
    if (req.method === 'PUT') {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        bucket.set(key, { body: Buffer.concat(chunks), contentType: req.headers['content-type'] });
        res.writeHead(201).end();
      });
      return;
    }
    if (req.method === 'GET') {
      const object = bucket.get(key);
      if (!object) return void res.writeHead(404).end('not found');
      // ?chunked: no content-length, so the size is only known by counting.
      const headers = req.url?.endsWith('?chunked')
        ? {}
        : { 'content-length': String(object.body.length) };
      res.writeHead(200, {
        ...headers,
        'content-type': object.contentType ?? 'application/octet-stream',
      });
      return void res.end(object.body);
    }
    res.writeHead(405).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    buckets,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function httpHarness(): Promise<StoreHarness> {
  const server = await startMemoryServer();
  const store = createHttpStore(createGuardedHttp({ allowPrivateNetworks: true }));
  const dead = `http://127.0.0.1:${await closedPort()}`;
  return {
    store,
    createBucket: async () => {
      const name = randomName('httpt');
      const objects = new Map<string, StoredObject>();
      server.buckets.set(name, objects);
      return {
        url: (key) => `${server.base}/${name}/${encodeURIComponent(key)}`,
        contentType: async (key) => objects.get(key)?.contentType,
        remove: async () => void server.buckets.delete(name),
      };
    },
    missingBucketUrl: (key) => `${server.base}/${randomName('nobucket')}/${key}`,
    unreachable: { store, url: (key) => `${dead}/${key}` },
    close: () => server.close(),
  };
}

describeMediaStore('http (in-memory file server)', httpHarness);

describe('http store specifics', () => {
  let harness: StoreHarness;
  let dir: string;
  const never = new AbortController().signal;

  before(async () => {
    harness = await httpHarness();
    dir = await mkdtemp(join(tmpdir(), 'http-store-'));
  });
  after(async () => {
    await harness?.close?.();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('counts bytes against maxBytes when the server declares no length', async () => {
    const bucket = await harness.createBucket();
    const source = join(dir, 'src.bin');
    await writeFile(source, Buffer.alloc(200_000, 1));
    await harness.store.upload(source, bucket.url('a.bin'), {
      signal: never,
      contentType: 'video/mp4',
    });
    const error = await harness.store
      .download(`${bucket.url('a.bin')}?chunked`, join(dir, 'out.bin'), {
        signal: never,
        maxBytes: 100_000,
      })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(MediaError);
    expect((error as MediaError).code).to.equal('input_too_large');
    // The http store leaves what it wrote before the limit; the job's temp dir removes it.
    if (existsSync(join(dir, 'out.bin')))
      expect((await stat(join(dir, 'out.bin'))).size).to.be.at.most(100_000);
    await bucket.remove();
  });

  it('an https:// URL to a plain-HTTP server is a permanent error that says so, both ways', async () => {
    const bucket = await harness.createBucket();
    const plainAsTls = bucket.url('a.bin').replace(/^http:/, 'https:');
    const source = join(dir, 'tls.bin');
    await writeFile(source, Buffer.alloc(1000, 1));
    const failures = [
      await harness.store
        .download(plainAsTls, join(dir, 'tls-out.bin'), { signal: never, maxBytes: 1e6 })
        .catch((e: unknown) => e),
      await harness.store
        .upload(source, plainAsTls, { signal: never, contentType: 'video/mp4' })
        .catch((e: unknown) => e),
    ];
    const port = new URL(plainAsTls).port;
    for (const [error, code] of [
      [failures[0], 'input_rejected'],
      [failures[1], 'output_rejected'],
    ] as const) {
      expect(error).to.be.instanceOf(MediaError);
      expect((error as MediaError).code).to.equal(code);
      expect((error as MediaError).retryable).to.equal(false);
      expect((error as MediaError).message).to.equal(
        `the file server at 127.0.0.1:${port} answers plain HTTP, not TLS: use an http:// URL for it`,
      );
    }
    await bucket.remove();
  });
});
