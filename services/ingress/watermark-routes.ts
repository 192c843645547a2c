import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Contracts } from '../core/contracts/load-contracts.ts';
import type { WatermarkList } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import { sniffImage, type ImageFacts, type ImageType } from '../core/media/sniff-image.ts';
import type { Logger } from '../core/observability/logger.ts';
import type { WatermarkLibrary } from '../core/watermarks/watermark-library.ts';
import { organisationOf, type Authenticator } from './authenticate.ts';
import { ClientClosedRequest } from './read-json-body.ts';

/** The watermark library behind /watermarks and what an upload may be. */
export interface WatermarkRoutesOptions {
  /** Undefined: the routes answer that named images are not set up here. */
  library: WatermarkLibrary | undefined;
  /** Largest image, in bytes (WATERMARK_MAX_BYTES). */
  maxBytes: number;
  /** Largest width and height, in pixels (WATERMARK_MAX_WIDTH, WATERMARK_MAX_HEIGHT). */
  maxWidth: number;
  maxHeight: number;
}

interface Deps {
  authenticate: Authenticator;
  contracts: Contracts;
  log: Logger;
}

const TYPES: readonly ImageType[] = ['image/png', 'image/jpeg', 'image/webp'];

/** `PUT`, `GET` and `DELETE /watermarks/:name` and `GET /watermarks`, per organisation. */
export function addWatermarkRoutes(
  router: Router,
  options: WatermarkRoutesOptions,
  deps: Deps,
): void {
  router.get('/watermarks', async (ctx) => {
    const { orgId, library } = open(ctx, options, deps);
    const body: WatermarkList = { images: await library.list(orgId) };
    ctx.body = body;
  });
  router.get('/watermarks/:name', async (ctx) => {
    const { orgId, library } = open(ctx, options, deps);
    const name = nameOf(ctx, deps);
    const bytes = await download(library, orgId, name, options.maxBytes);
    ctx.type = sniffImage(bytes)?.type ?? 'application/octet-stream';
    ctx.body = bytes;
  });
  router.put('/watermarks/:name', async (ctx) => {
    const { orgId, library } = open(ctx, options, deps);
    const name = nameOf(ctx, deps);
    const declared = declaredType(ctx);
    const bytes = await readImageBody(ctx, options.maxBytes);
    const facts = checkImage(bytes, declared, options);
    const { image, created } = await library.put(orgId, name, bytes, facts);
    deps.log.info('watermark.stored', { orgId, name, sizeBytes: image.sizeBytes, created });
    ctx.status = created ? 201 : 200;
    ctx.body = image;
  });
  router.delete('/watermarks/:name', async (ctx) => {
    const { orgId, library } = open(ctx, options, deps);
    const name = nameOf(ctx, deps);
    if (!(await library.remove(orgId, name)))
      throw new MediaError('not_found', `no watermark image named "${name}" for this API key`);
    deps.log.info('watermark.removed', { orgId, name });
    ctx.status = 204;
  });
}

function open(
  ctx: Context,
  options: WatermarkRoutesOptions,
  deps: Deps,
): { orgId: string; library: WatermarkLibrary } {
  const orgId = organisationOf(ctx, deps.authenticate);
  if (!options.library)
    throw new MediaError('not_found', 'named watermark images are not set up on this service');
  return { orgId, library: options.library };
}

/**
 * The stored bytes, through the library's one way out (the copy a job gets), so a folder and a
 * bucket library answer alike. An image is small (at most WATERMARK_MAX_BYTES): held in memory.
 */
async function download(
  library: WatermarkLibrary,
  orgId: string,
  name: string,
  maxBytes: number,
): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'watermark-download-'));
  try {
    const path = join(dir, 'image');
    await library.fetch(orgId, name, path, { signal: new AbortController().signal, maxBytes });
    return await readFile(path);
  } catch (error) {
    if (error instanceof MediaError && error.code === 'watermark_unavailable')
      throw new MediaError('not_found', `no watermark image named "${name}" for this API key`);
    throw error;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function nameOf(ctx: Context, deps: Deps): string {
  const name = (ctx['params'] as Record<string, string | undefined>)['name'] ?? '';
  const checked = deps.contracts.imageName(name);
  if (!checked.ok) throw new MediaError('invalid_request', `the watermark name ${checked.message}`);
  return checked.value;
}

function declaredType(ctx: Context): ImageType {
  const declared = TYPES.find((t) => ctx.is(t));
  if (!declared)
    throw new MediaError(
      'unsupported_media_type',
      'send the image with Content-Type: image/png, image/jpeg or image/webp',
    );
  const encoding = ctx.get('content-encoding');
  if (encoding && encoding !== 'identity')
    throw new MediaError('unsupported_media_type', 'send the image without Content-Encoding');
  return declared;
}

/**
 * The body, at most `maxBytes` (a watermark is small: held in memory, unlike media). Too large
 * is refused from Content-Length before reading, or as soon as the count passes the cap.
 */
async function readImageBody(ctx: Context, maxBytes: number): Promise<Buffer> {
  const tooLarge = (): MediaError =>
    new MediaError('payload_too_large', `the image must be at most ${maxBytes} bytes`);
  if (Number(ctx.get('content-length') || NaN) > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        ctx.req.resume();
        throw tooLarge();
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof MediaError) throw error;
    throw new ClientClosedRequest(
      'the client closed the connection before sending the whole image',
      { cause: error },
    );
  }
  return Buffer.concat(chunks);
}

/** The type from the bytes, which must be the declared one, and the size within the caps. */
function checkImage(
  bytes: Buffer,
  declared: ImageType,
  options: WatermarkRoutesOptions,
): ImageFacts {
  const facts = sniffImage(bytes);
  if (!facts)
    throw new MediaError('unsupported_media_type', 'the body is not a png, jpeg or webp image');
  if (facts.type !== declared)
    throw new MediaError(
      'unsupported_media_type',
      `the body is ${facts.type}, not the declared ${declared}`,
    );
  if (facts.width > options.maxWidth || facts.height > options.maxHeight)
    throw new MediaError(
      'invalid_request',
      `the image is ${facts.width}×${facts.height} pixels; at most ${options.maxWidth}×${options.maxHeight} are accepted`,
    );
  return facts;
}
