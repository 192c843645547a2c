import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { WatermarkImage } from '../contracts/types.generated.ts';
import type { ImageType } from '../media/sniff-image.ts';
import { notInLibrary, type WatermarkLibrary } from './watermark-library.ts';
import { bodyToFile } from '../storage/bucket-transfer.ts';

/** The service's own bucket for the watermark library (never a caller's credentials). */
export interface WatermarkBucketOptions {
  bucket: string;
  region: string;
  /** S3-compatible endpoint (path-style addressing then); unset: AWS. */
  endpoint?: string;
  /** Unset: the SDK's default chain (instance role, AWS_* variables). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

const TYPES = new Set<string>(['image/png', 'image/jpeg', 'image/webp']);
/** HEADs in flight at once while listing (one per image: a listing does not carry metadata). */
const LIST_CONCURRENCY = 8;

const isNotFound = (error: unknown): boolean =>
  error instanceof S3ServiceException &&
  (error.$metadata.httpStatusCode === 404 ||
    error.name === 'NoSuchKey' ||
    error.name === 'NotFound');

/**
 * `<orgId>/<name>` objects with their type as Content-Type and their size in metadata, so a
 * listing needs no download. One client for the process, closed with `close()`.
 */
export function createBucketLibrary(
  options: WatermarkBucketOptions,
): WatermarkLibrary & { close(): void } {
  const client = new S3Client({
    region: options.region,
    ...(options.credentials && { credentials: options.credentials }),
    ...(options.endpoint !== undefined && { endpoint: options.endpoint, forcePathStyle: true }),
  });
  const b: Bucket = { client, Bucket: options.bucket };
  return {
    async put(orgId, name, bytes, facts) {
      const created = (await head(b, orgId, name)) === undefined;
      await client.send(
        new PutObjectCommand({
          Bucket: b.Bucket,
          Key: keyOf(orgId, name),
          Body: bytes,
          ContentType: facts.type,
          Metadata: { width: String(facts.width), height: String(facts.height) },
        }),
      );
      const image = (await head(b, orgId, name)) ?? {
        name,
        sizeBytes: bytes.length,
        ...facts,
        updatedAt: new Date().toISOString(),
      };
      return { image, created };
    },

    list: (orgId) => list(b, orgId),

    async remove(orgId, name) {
      // S3 deletes succeed whether or not the object was there; the HEAD says which it was.
      if ((await head(b, orgId, name)) === undefined) return false;
      await client.send(new DeleteObjectCommand({ Bucket: b.Bucket, Key: keyOf(orgId, name) }));
      return true;
    },

    fetch: (orgId, name, destPath, limits) => fetchImage(b, orgId, name, destPath, limits),

    close() {
      client.destroy();
    },
  };
}

interface Bucket {
  client: S3Client;
  Bucket: string;
}

const keyOf = (orgId: string, name: string): string => `${orgId}/${name}`;

/** The image's facts from its object's HEAD; undefined when absent or not an image of ours. */
async function head(b: Bucket, orgId: string, name: string): Promise<WatermarkImage | undefined> {
  const res = await b.client
    .send(new HeadObjectCommand({ Bucket: b.Bucket, Key: keyOf(orgId, name) }))
    .catch((error: unknown) => {
      if (isNotFound(error)) return undefined;
      throw error;
    });
  if (!res) return undefined;
  const width = Number(res.Metadata?.['width']);
  const height = Number(res.Metadata?.['height']);
  const type = res.ContentType ?? '';
  if (!TYPES.has(type) || !(width > 0) || !(height > 0)) return undefined;
  return {
    name,
    type: type as ImageType,
    sizeBytes: res.ContentLength ?? 0,
    width,
    height,
    updatedAt: (res.LastModified ?? new Date(0)).toISOString(),
  };
}

/** The organisation's images: its object names, then a HEAD each, LIST_CONCURRENCY at once. */
async function list(b: Bucket, orgId: string): Promise<WatermarkImage[]> {
  const names: string[] = [];
  let ContinuationToken: string | undefined;
  do {
    const page = await b.client.send(
      new ListObjectsV2Command({ Bucket: b.Bucket, Prefix: `${orgId}/`, ContinuationToken }),
    );
    for (const object of page.Contents ?? []) {
      const name = object.Key?.slice(orgId.length + 1) ?? '';
      if (name && !name.includes('/')) names.push(name);
    }
    ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (ContinuationToken);
  const images: (WatermarkImage | undefined)[] = [];
  for (let i = 0; i < names.length; i += LIST_CONCURRENCY)
    images.push(
      ...(await Promise.all(names.slice(i, i + LIST_CONCURRENCY).map((n) => head(b, orgId, n)))),
    );
  return images.filter((i): i is WatermarkImage => i !== undefined);
}

async function fetchImage(
  b: Bucket,
  orgId: string,
  name: string,
  destPath: string,
  { signal, maxBytes }: Parameters<WatermarkLibrary['fetch']>[3],
): Promise<void> {
  const res = await b.client
    .send(new GetObjectCommand({ Bucket: b.Bucket, Key: keyOf(orgId, name) }), {
      abortSignal: signal,
    })
    .catch((error: unknown) => {
      if (isNotFound(error)) throw notInLibrary(name, error);
      throw error;
    });
  if (!(res.Body instanceof Readable)) throw new Error('the watermark bucket sent no body');
  await bodyToFile(res.Body, destPath, {
    signal,
    maxBytes,
    declared: res.ContentLength,
    onProgress: undefined,
  });
}
