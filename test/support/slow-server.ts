import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP server that is slow on purpose: GET trickles one byte every `trickleEveryMs` (of a
 * declared `declaredBytes`), PUT never reads the body. Tests of rate floors and aborted transfers.
 */
export interface SlowServer {
  url: string;
  /** Requests seen so far, by method. */
  seen: { method: string; path: string }[];
  close(): Promise<void>;
}

export async function startSlowServer(options: {
  trickleEveryMs: number;
  declaredBytes: number;
}): Promise<SlowServer> {
  const seen: SlowServer['seen'] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', path: req.url ?? '' });
    if (req.method === 'PUT') {
      // Never read: the client's socket buffers fill and the upload stalls mid-way.
      req.pause();
      return;
    }
    res.writeHead(200, {
      'content-length': String(options.declaredBytes),
      'content-type': 'application/octet-stream',
    });
    let sent = 0;
    const timer = setInterval(() => {
      if (sent >= options.declaredBytes || res.destroyed) return clearInterval(timer);
      res.write(Buffer.from([sent++ & 0xff]));
    }, options.trickleEveryMs);
    timers.add(timer);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    async close() {
      timers.forEach((t) => clearInterval(t));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
