import { stat } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { MediaError } from '../errors.ts';
import { ForbiddenUrlError, type GuardedRequest, type HttpClient } from '../net/guarded-http.ts';
import {
  bodyToFile,
  checkDeclaredSize,
  countedFileSource,
  failureToMediaError,
  mapTransferErrors,
  throttledProgress,
  type FailureFacts,
  type Side,
} from './bucket-transfer.ts';
import type { MediaStore } from './media-store.ts';

const SERVICE = 'the file server';

/** Only the status and the transport code are known here; the store maps them like the others. */
const facts = (): FailureFacts => ({});

/** A refused address is the caller's mistake, never worth a retry. */
async function send(
  http: HttpClient,
  url: string,
  request: GuardedRequest,
  side: Side,
): Promise<IncomingMessage> {
  try {
    const res = await http.request(url, request);
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return res;
    res.resume();
    throw failureToMediaError(SERVICE, side, { status });
  } catch (error) {
    if (error instanceof ForbiddenUrlError)
      throw new MediaError('url_forbidden', `${side} URL refused: ${error.message}`);
    if (url.startsWith('https:') && isPlainHttpAnswer(error))
      throw new MediaError(
        side === 'input' ? 'input_rejected' : 'output_rejected',
        `${SERVICE} at ${new URL(url).host} answers plain HTTP, not TLS: use an http:// URL for it`,
      );
    throw error;
  }
}

/**
 * OpenSSL's verdict on a first answer that is not a TLS record (a plain-HTTP server answering
 * a handshake): no retry changes it, so it is the caller's URL to fix, not a network fault.
 */
function isPlainHttpAnswer(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    (code === 'EPROTO' || code === 'ERR_SSL_WRONG_VERSION_NUMBER') &&
    typeof message === 'string' &&
    /wrong version number|packet length too long|http request/i.test(message)
  );
}

/** A plain file server: GET reads the input, PUT writes the output. */
export function createHttpStore(http: HttpClient): MediaStore {
  return {
    download(url, destPath, { signal, maxBytes, onProgress }) {
      return mapTransferErrors(SERVICE, 'input', signal, facts, async () => {
        const res = await send(
          http,
          url,
          { method: 'GET', signal, headers: { accept: '*/*' } },
          'input',
        );
        const length = res.headers['content-length'];
        const declared = length === undefined ? undefined : Number(length);
        try {
          checkDeclaredSize(declared, maxBytes);
        } catch (error) {
          res.destroy();
          throw error;
        }
        return {
          bytes: await bodyToFile(res, destPath, { signal, maxBytes, declared, onProgress }),
        };
      });
    },

    upload(srcPath, url, { signal, contentType, onProgress }) {
      return mapTransferErrors(SERVICE, 'output', signal, facts, async () => {
        const { size } = await stat(srcPath);
        const progress = throttledProgress(onProgress);
        const body = countedFileSource(srcPath, signal, 'output', (n) => progress.report(n));
        await send(
          http,
          url,
          {
            method: 'PUT',
            signal,
            body,
            headers: { 'content-type': contentType, 'content-length': String(size) },
          },
          'output',
        ).then((res) => res.resume());
        progress.flush();
        return { bytes: size };
      });
    },

    remove(url, { signal }) {
      return mapTransferErrors(SERVICE, 'output', signal, facts, async () => {
        let res: IncomingMessage;
        try {
          res = await http.request(url, { method: 'DELETE', signal });
        } catch (error) {
          if (error instanceof ForbiddenUrlError)
            throw new MediaError('url_forbidden', `output URL refused: ${error.message}`);
          throw error;
        }
        const status = res.statusCode ?? 0;
        res.resume();
        // Already gone is what was asked for.
        if ((status >= 200 && status < 300) || status === 404 || status === 410) return;
        throw failureToMediaError(SERVICE, 'output', { status });
      });
    },
  };
}
