import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MediaError } from '../errors.ts';
import { ForbiddenUrlError, type HttpClient } from '../net/guarded-http.ts';
import type { MediaStore } from './media-store.ts';

function counter(onBytes: (total: number) => void, maxBytes = Infinity): Transform {
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      total += chunk.length;
      if (total > maxBytes) return done(new MediaError('input_too_large', `the input is larger than ${maxBytes} bytes`));
      onBytes(total);
      done(null, chunk);
    },
  });
}

function transportError(error: unknown, side: 'input' | 'output', url: string): MediaError {
  if (error instanceof MediaError) return error;
  if (error instanceof ForbiddenUrlError) return new MediaError('url_forbidden', `${side} URL refused: ${error.message}`);
  const host = new URL(url).host;
  const code = side === 'input' ? 'input_unreachable' : 'output_unreachable';
  return new MediaError(code, `could not reach ${host}: ${(error as Error).message}`, { cause: error });
}

/** A plain file server: GET reads the input, PUT writes the output. */
export function createHttpStore(http: HttpClient): MediaStore {
  return {
    async download(url, destPath, { signal, maxBytes, onProgress }) {
      let bytes = 0;
      try {
        const res = await http.request(url, { method: 'GET', signal, headers: { accept: '*/*' } });
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          res.resume();
          if (status === 404 || status === 410) throw new MediaError('input_not_found', `the input URL answered ${status}`);
          if (status >= 500 || status === 429 || status === 408) throw new MediaError('input_unreachable', `the input URL answered ${status}`);
          throw new MediaError('input_rejected', `the input URL answered ${status}`);
        }
        const declared = Number(res.headers['content-length'] ?? NaN);
        if (declared > maxBytes) {
          res.destroy();
          throw new MediaError('input_too_large', `the input is ${declared} bytes; the limit is ${maxBytes}`);
        }
        await pipeline(res, counter((n) => { bytes = n; onProgress?.(n); }, maxBytes), createWriteStream(destPath), { signal });
        if (Number.isFinite(declared) && bytes !== declared)
          throw new MediaError('input_unreachable', `the input ended after ${bytes} of ${declared} bytes`);
        return { bytes };
      } catch (error) {
        throw transportError(error, 'input', url);
      }
    },

    async upload(srcPath, url, { signal, contentType, onProgress }) {
      const { size } = await stat(srcPath);
      try {
        const body = createReadStream(srcPath).pipe(counter((n) => onProgress?.(n)));
        const res = await http.request(url, {
          method: 'PUT',
          signal,
          body,
          headers: { 'content-type': contentType, 'content-length': String(size) },
        });
        res.resume();
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) return { bytes: size };
        if (status >= 500 || status === 429 || status === 408) throw new MediaError('output_unreachable', `the output URL answered ${status}`);
        throw new MediaError('output_rejected', `the output URL answered ${status}`);
      } catch (error) {
        throw transportError(error, 'output', url);
      }
    },
  };
}
