import http from 'node:http';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AddressInfo } from 'node:net';

export interface ReceivedCallback {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** The body exactly as sent (signatures are over these bytes). */
  raw: string;
}

/**
 * A real HTTP file server for tests: GET and PUT files under /files/, and callback receivers
 * under /callbacks/ that record what they were sent (status settable per path).
 */
export interface TestServer {
  url: string;
  dir: string;
  /** The request targets (path and query, as sent) of the PUTs stored, in order. */
  puts: string[];
  callbacks: ReceivedCallback[];
  /** Status a callback path answers with (default 200). */
  callbackStatus: Map<string, number>;
  waitForCallback(
    predicate: (c: ReceivedCallback) => boolean,
    timeoutMs: number,
  ): Promise<ReceivedCallback>;
  close(): Promise<void>;
}

/** Options of {@link startTestServer}; the tests use none. */
export interface TestServerOptions {
  /** Port on 127.0.0.1 (default 0: any free port). */
  port?: number;
  /** Called once an upload (PUT) is stored, with its file name and size in bytes. */
  onUpload?: (name: string, sizeBytes: number) => void;
  /** Called for each callback before it is answered; a number returned is the status sent. */
  onCallback?: (callback: ReceivedCallback) => number | undefined;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'media-test-files-'));
  const puts: string[] = [];
  const callbacks: ReceivedCallback[] = [];
  const callbackStatus = new Map<string, number>();
  const waiters = new Set<() => void>();
  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const name = decodeURIComponent(url.pathname.replace(/^\/files\//, ''));
      if (url.pathname.startsWith('/files/') && !name.includes('/') && !name.includes('..')) {
        const path = join(dir, name);
        if (req.method === 'PUT') {
          await pipeline(req, createWriteStream(path));
          puts.push(req.url ?? '');
          options.onUpload?.(name, (await stat(path)).size);
          return res.writeHead(201).end();
        }
        if (req.method === 'GET') {
          const info = await stat(path).catch(() => undefined);
          if (!info) return res.writeHead(404).end('not found');
          res.writeHead(200, {
            'content-length': info.size,
            'content-type': 'application/octet-stream',
          });
          return pipeline(createReadStream(path), res);
        }
      }
      if (url.pathname.startsWith('/callbacks/') && req.method === 'POST') {
        const callback = await receiveCallback(url.pathname, req);
        callbacks.push(callback);
        waiters.forEach((w) => w());
        const status = options.onCallback?.(callback) ?? callbackStatus.get(url.pathname) ?? 200;
        return res.writeHead(status).end();
      }
      res.writeHead(404).end();
    })().catch(() => {
      // A stream that fails after its headers went out (the client hung up) can only be cut.
      if (res.headersSent) res.destroy();
      else res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject); // a port in use
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    dir,
    puts,
    callbacks,
    callbackStatus,
    waitForCallback: (predicate, timeoutMs) =>
      waitForCallback(callbacks, waiters, predicate, timeoutMs),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function receiveCallback(path: string, req: http.IncomingMessage): Promise<ReceivedCallback> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return { path, headers: req.headers, body: JSON.parse(raw) as Record<string, unknown>, raw };
}

/** Resolves with the first callback matching `predicate`, checked again as each one arrives. */
function waitForCallback(
  callbacks: ReceivedCallback[],
  waiters: Set<() => void>,
  predicate: (c: ReceivedCallback) => boolean,
  timeoutMs: number,
): Promise<ReceivedCallback> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const found = callbacks.find(predicate);
      if (!found) return;
      cleanup();
      resolve(found);
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no matching callback within ${timeoutMs} ms (got ${callbacks.length})`));
    }, timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      waiters.delete(check);
    };
    waiters.add(check);
    check();
  });
}
