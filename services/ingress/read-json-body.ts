import type { IncomingMessage } from 'node:http';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { MediaError } from '../core/errors.ts';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The caller went away: nobody is left to answer, and it is not this service's fault. */
export class ClientClosedRequest extends Error {
  override name = 'ClientClosedRequest';
}

const decoders: Record<string, () => Transform> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/**
 * Reads the request body as JSON: 415 unless JSON (or in a content coding other than gzip,
 * deflate, br), 413 past `maxBytes` (of decoded bytes, so a small compressed body cannot
 * unfold into a large one), 400 unless strict UTF-8 and a JSON object. raw-body does the
 * reading: the declared and streamed limits, bodies cut short, and aborted requests.
 */
export async function readJsonBody(
  ctx: Context,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  if (!ctx.is('application/json', 'application/*+json'))
    throw new MediaError(
      'unsupported_media_type',
      'the body must be JSON, sent with Content-Type: application/json',
    );
  const bytes = await readBytes(ctx.req, ctx.get('content-encoding').toLowerCase(), maxBytes);
  let text: string;
  try {
    // The contract's strings are text: bytes that are not UTF-8 are refused, not replaced.
    text = strictUtf8.decode(bytes);
  } catch {
    throw new MediaError('invalid_json', 'the body is not valid UTF-8');
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new MediaError('invalid_json', 'the body is not valid JSON');
  }
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new MediaError('invalid_json', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

async function readBytes(req: IncomingMessage, coding: string, maxBytes: number): Promise<Buffer> {
  const identity = coding === '' || coding === 'identity';
  const decoder = identity ? undefined : decoders[coding];
  if (!identity && !decoder)
    throw new MediaError(
      'unsupported_media_type',
      `Content-Encoding ${coding} is not supported; send the body as is, or in gzip, deflate or br`,
    );
  let source: Readable = req;
  if (decoder) {
    const decoding = decoder();
    // Errors reach raw-body through the decoder, which the pipeline destroys with them.
    pipeline(req, decoding, () => undefined);
    source = decoding;
  }
  const declared = req.headers['content-length'];
  try {
    return await getRawBody(source, {
      limit: maxBytes,
      // The declared length counts encoded bytes: raw-body checks it only for identity bodies.
      ...(identity && declared !== undefined ? { length: declared } : {}),
    });
  } catch (error) {
    const type = (error as { type?: unknown }).type;
    if (type === 'entity.too.large') {
      // The rest is read and dropped, so that the answer reaches a client still sending.
      if (decoder) source.destroy();
      req.resume();
      throw new MediaError('payload_too_large', `the body must be at most ${maxBytes} bytes`);
    }
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('Z_'))
      throw new MediaError('invalid_json', `the body is not valid ${coding} data`);
    // Otherwise reading failed because the client closed the connection mid-body.
    throw new ClientClosedRequest(
      'the client closed the connection before sending the whole body',
      { cause: error },
    );
  }
}
