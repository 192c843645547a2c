import type { Context } from 'koa';
import { MediaError } from '../core/errors.ts';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The caller went away: nobody is left to answer, and it is not this service's fault. */
export class ClientClosedRequest extends Error {
  override name = 'ClientClosedRequest';
}

/** Reads the request body as JSON: 415 unless JSON, 413 past `maxBytes`, 400 unless an object. */
export async function readJsonBody(
  ctx: Context,
  maxBytes: number,
): Promise<Record<string, unknown>> {
  if (!ctx.is('application/json', 'application/*+json'))
    throw new MediaError(
      'unsupported_media_type',
      'the body must be JSON, sent with Content-Type: application/json',
    );
  const declared = Number(ctx.get('content-length') || NaN);
  if (declared > maxBytes)
    throw new MediaError('payload_too_large', `the body must be at most ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        ctx.req.resume();
        throw new MediaError('payload_too_large', `the body must be at most ${maxBytes} bytes`);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof MediaError) throw error;
    // The only way reading a request body fails: the client closed the connection mid-body.
    throw new ClientClosedRequest(
      'the client closed the connection before sending the whole body',
      { cause: error },
    );
  }
  let text: string;
  try {
    // The contract's strings are text: bytes that are not UTF-8 are refused, not replaced.
    text = strictUtf8.decode(Buffer.concat(chunks));
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
