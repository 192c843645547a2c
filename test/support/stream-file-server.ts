import http from 'node:http';
import { createReadStream, createWriteStream } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AddressInfo } from 'node:net';
import { joinRendition } from '../../services/streamer/measure-rungs.ts';

const TYPES: Record<string, string> = {
  m3u8: 'application/vnd.apple.mpegurl',
  mpd: 'application/dash+xml',
  m4s: 'video/iso.segment',
  mp4: 'video/mp4',
  jpg: 'image/jpeg',
  vtt: 'text/vtt',
  html: 'text/html; charset=utf-8',
  js: 'text/javascript',
};

/**
 * A file server for stream tests: PUT and GET of nested paths (a stream's folders), the order
 * in which uploads completed, a hook that may refuse an upload, and CORS, so that a browser
 * page on it plays what it serves. A stored file is served with the content type its PUT sent
 * (as a bucket keeps it), other files by their extension. Extra folders (a player's dist/) can
 * be mounted read-only.
 */
export interface StreamFileServer {
  url: string;
  dir: string;
  /** Paths of completed PUTs, in the order they completed. */
  uploads: string[];
  /** The content type each completed PUT sent, by path (none when it sent none). */
  types: Map<string, string>;
  /** Paths of DELETEs answered. */
  deletes: string[];
  /** Files stored now under `prefix` (relative to the server's root), sorted. */
  stored(prefix: string): Promise<string[]>;
  close(): Promise<void>;
}

export async function startStreamFileServer(
  o: {
    /** Status to answer a PUT of this path with instead of storing it (undefined: store it). */
    refuse?: (path: string) => number | undefined;
    /**
     * Ms between a PUT's whole body arriving and the object being stored and answered, as a
     * service still writing it: a client that gives up meanwhile does not stop the store.
     */
    holdMs?: (path: string) => number;
    /** URL prefix → local folder, served read-only (GET). */
    mounts?: Record<string, string>;
  } = {},
): Promise<StreamFileServer> {
  const dir = await mkdtemp(join(tmpdir(), 'stream-files-'));
  const uploads: string[] = [];
  const types = new Map<string, string>();
  const deletes: string[] = [];
  const server = http.createServer((req, res) => {
    void (async () => {
      const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
      if (path.includes('..')) return res.writeHead(400).end();
      res.setHeader('access-control-allow-origin', '*');
      if (req.method === 'PUT') {
        const refused = o.refuse?.(path);
        if (refused !== undefined) {
          req.resume();
          return res.writeHead(refused).end();
        }
        await storeUpload(req, join(dir, path), o.holdMs?.(path) ?? 0);
        const sent = req.headers['content-type'];
        if (sent === undefined) types.delete(path.slice(1));
        else types.set(path.slice(1), sent);
        uploads.push(path.slice(1));
        return res.writeHead(201).end();
      }
      if (req.method === 'DELETE') {
        const gone = await stat(join(dir, path)).then(
          () => false,
          () => true,
        );
        await rm(join(dir, path), { force: true });
        types.delete(path.slice(1));
        deletes.push(path.slice(1));
        return res.writeHead(gone ? 404 : 204).end();
      }
      if (req.method === 'GET' || req.method === 'HEAD') {
        const mount = Object.entries(o.mounts ?? {}).find(([p]) => path.startsWith(p));
        const file = mount ? join(mount[1], path.slice(mount[0].length)) : join(dir, path);
        const info = await stat(file).catch(() => undefined);
        if (!info?.isFile()) return res.writeHead(404).end('not found');
        const type =
          (mount ? undefined : types.get(path.slice(1))) ??
          TYPES[file.slice(file.lastIndexOf('.') + 1)] ??
          'application/octet-stream';
        res.writeHead(200, { 'content-length': info.size, 'content-type': type });
        if (req.method === 'HEAD') return res.end();
        return pipeline(createReadStream(file), res);
      }
      res.writeHead(405).end();
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    dir,
    uploads,
    types,
    deletes,
    async stored(prefix) {
      const files = await readdir(join(dir, prefix), {
        recursive: true,
        withFileTypes: true,
      }).catch(() => []);
      return files
        .filter((f) => f.isFile())
        .map((f) => join(f.parentPath, f.name).slice(dir.length + 1))
        .sort();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Stores a PUT's body at `file` once it has all arrived, `holdMs` later. */
async function storeUpload(req: http.IncomingMessage, file: string, holdMs: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const arriving = `${file}.${randomUUID()}.part`;
  try {
    await pipeline(req, createWriteStream(arriving));
  } catch (error) {
    // As a bucket does, a PUT cut short leaves no object.
    await rm(arriving, { force: true });
    throw error;
  }
  if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
  await rename(arriving, file);
}

/**
 * A rendition folder as stored (its init segment, then its media segments in name order)
 * joined into one file at `out` by the streamer's own joinRendition; resolves with the names.
 */
export async function joinedRendition(
  dir: string,
  out: string,
): Promise<{ init: string[]; segments: string[] }> {
  const names = (await readdir(dir)).sort();
  const init = names.filter((n) => n.startsWith('init'));
  const segments = names.filter((n) => n.endsWith('.m4s'));
  await joinRendition(
    dir,
    { init: init[0] ?? 'init.mp4', segments: segments.map((uri) => ({ uri })) },
    out,
  );
  return { init, segments };
}
