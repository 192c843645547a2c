import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { AwsCredentials } from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import { parseBucketUrl } from './bucket-url.ts';
import {
  bodyToFile,
  checkDeclaredSize,
  countedFileSource,
  credentialsError,
  mapTransferErrors,
  stringField,
  throttledProgress,
  type FailureFacts,
  type Side,
} from './bucket-transfer.ts';
import type { MediaStore } from './media-store.ts';

/** Service configuration for `s3://` locations; never taken from the caller. */
export interface S3StoreOptions {
  /** Endpoint of an S3-compatible store or emulator, e.g. `http://127.0.0.1:9000`. Default: AWS, by the credentials' region. */
  endpoint?: string;
  /** Address buckets as `endpoint/bucket/key` instead of `bucket.endpoint/key` (emulators need it). Default false. */
  forcePathStyle?: boolean;
  /** Attempts per request, the first included. Default 3 (the SDK's). */
  maxAttempts?: number;
  /**
   * Upload part size in bytes, at least 5 MiB. A file up to one part goes in a single PUT;
   * an upload holds at most two parts in memory. Default 8 MiB.
   */
  partSizeBytes?: number;
  /** `WHEN_REQUIRED` for S3-compatible stores that refuse the SDK's default CRC32 checksums. Default `WHEN_SUPPORTED`. */
  requestChecksumCalculation?: 'WHEN_SUPPORTED' | 'WHEN_REQUIRED';
  /** Time allowed to connect, in ms. Default 10 000. */
  connectTimeoutMs?: number;
  /** Time a socket may stay idle mid-request before the attempt fails, in ms. Default 60 000. */
  idleTimeoutMs?: number;
}

const SERVICE = 'S3';
const MIN_PART_BYTES = 5 * 1024 * 1024;
const REGION = /^[a-z0-9-]{2,32}$/;

function readCredentials(credentials: unknown, side: Side): AwsCredentials {
  const region = stringField(credentials, 'region');
  const accessKeyId = stringField(credentials, 'accessKeyId');
  const secretAccessKey = stringField(credentials, 'secretAccessKey');
  // The region becomes part of the host name, so it is checked here and not left to the SDK.
  if (!region || !REGION.test(region) || !accessKeyId || !secretAccessKey)
    throw credentialsError('s3://', side, 'region, accessKeyId and secretAccessKey');
  return { region, accessKeyId, secretAccessKey };
}

function facts(error: unknown): FailureFacts {
  if (error instanceof S3ServiceException) {
    const status = error.$metadata.httpStatusCode;
    return { ...(status !== undefined && { status }), serviceCode: error.name };
  }
  return {};
}

/** `s3://bucket/key` with the caller's credentials. Each transfer gets its own client, closed after it. */
export function createS3StoreFactory(
  options: S3StoreOptions = {},
): (credentials: unknown) => MediaStore {
  const partSize = Math.max(MIN_PART_BYTES, options.partSizeBytes ?? 8 * 1024 * 1024);
  const withClient = clientPerTransfer(options);
  return (credentials) => ({
    download(url, destPath, transfer) {
      return mapTransferErrors(SERVICE, 'input', transfer.signal, facts, () => {
        const { bucket, key } = parseBucketUrl(url, 's3', 'input');
        return withClient(credentials, 'input', (client) =>
          downloadObject(client, bucket, key, destPath, transfer),
        );
      });
    },

    upload(srcPath, url, transfer) {
      return mapTransferErrors(SERVICE, 'output', transfer.signal, facts, async () => {
        const { bucket, key } = parseBucketUrl(url, 's3', 'output');
        const { size } = await stat(srcPath);
        return withClient(credentials, 'output', (client) =>
          uploadFile(client, { bucket, key, partSize }, srcPath, size, transfer),
        );
      });
    },

    remove(url, { signal }) {
      return mapTransferErrors(SERVICE, 'output', signal, facts, async () => {
        const { bucket, key } = parseBucketUrl(url, 's3', 'output');
        await withClient(credentials, 'output', (client) =>
          client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }), {
            abortSignal: signal,
          }),
        );
      });
    },
  });
}

/** A client for one transfer with the caller's credentials, destroyed after it. */
function clientPerTransfer(
  options: S3StoreOptions,
): <T>(credentials: unknown, side: Side, use: (client: S3Client) => Promise<T>) => Promise<T> {
  return async (credentials, side, use) => {
    const { region, accessKeyId, secretAccessKey } = readCredentials(credentials, side);
    const client = new S3Client({
      region,
      // Explicit credentials only: the SDK's default chain would hand out the service's own.
      credentials: { accessKeyId, secretAccessKey },
      ...(options.endpoint !== undefined && { endpoint: options.endpoint }),
      forcePathStyle: options.forcePathStyle ?? false,
      // AWS_ENDPOINT_URL* in the environment must not redirect caller credentials elsewhere.
      ignoreConfiguredEndpointUrls: true,
      ...(options.maxAttempts !== undefined && { maxAttempts: options.maxAttempts }),
      ...(options.requestChecksumCalculation !== undefined && {
        requestChecksumCalculation: options.requestChecksumCalculation,
      }),
      requestHandler: {
        connectionTimeout: options.connectTimeoutMs ?? 10_000,
        socketTimeout: options.idleTimeoutMs ?? 60_000,
      },
    });
    try {
      return await use(client);
    } finally {
      client.destroy();
    }
  };
}

async function downloadObject(
  client: S3Client,
  bucket: string,
  key: string,
  destPath: string,
  { signal, maxBytes, onProgress }: Parameters<MediaStore['download']>[2],
): Promise<{ bytes: number }> {
  // The GET's own headers give the size, so a too-large object costs no extra request.
  const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), {
    abortSignal: signal,
  });
  if (!(res.Body instanceof Readable))
    throw new MediaError('input_unreachable', `${SERVICE} sent no body`);
  try {
    checkDeclaredSize(res.ContentLength, maxBytes);
  } catch (error) {
    res.Body.destroy();
    throw error;
  }
  const bytes = await bodyToFile(res.Body, destPath, {
    signal,
    maxBytes,
    declared: res.ContentLength,
    onProgress,
  });
  return { bytes };
}

async function uploadFile(
  client: S3Client,
  to: { bucket: string; key: string; partSize: number },
  srcPath: string,
  size: number,
  { signal, contentType, onProgress }: Parameters<MediaStore['upload']>[2],
): Promise<{ bytes: number }> {
  const abortController = new AbortController();
  const onAbort = (): void => abortController.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const progress = throttledProgress(onProgress);
  // The SDK reports progress per part (8 MiB); bytes read from the file keep the rate
  // floor fed in between (ahead of the network by at most the two parts in memory).
  let moved = 0;
  const report = (bytes: number): void => {
    moved = Math.max(moved, bytes);
    progress.report(moved);
  };
  try {
    const upload = new Upload({
      client,
      params: {
        Bucket: to.bucket,
        Key: to.key,
        Body: countedFileSource(srcPath, signal, 'output', report),
        ContentType: contentType,
        ContentLength: size,
      },
      partSize: to.partSize,
      queueSize: 2,
      leavePartsOnError: false,
      abortController,
    });
    upload.on('httpUploadProgress', (p) => report(p.loaded ?? 0));
    await upload.done();
    progress.report(size);
    progress.flush();
    return { bytes: size };
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
