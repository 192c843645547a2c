import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  BlobServiceClient,
  RestError,
  StorageSharedKeyCredential,
  type ContainerClient,
} from '@azure/storage-blob';
import type { AzureCredentials } from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import { parseBucketUrl } from './bucket-url.ts';
import {
  bodyToFile,
  checkDeclaredSize,
  credentialsError,
  mapTransferErrors,
  stringField,
  throttledProgress,
  type FailureFacts,
  type Side,
} from './bucket-transfer.ts';
import type { MediaStore } from './media-store.ts';

/** Service configuration for `azure://` locations; never taken from the caller. */
export interface AzureStoreOptions {
  /**
   * One blob endpoint for every account, e.g. Azurite's `http://127.0.0.1:10000/devstoreaccount1`.
   * Takes precedence over endpointTemplate.
   */
  blobEndpoint?: string;
  /** The blob endpoint with `{accountName}` in it. Default `https://{accountName}.blob.core.windows.net`. */
  endpointTemplate?: string;
  /** Tries per request, the first included. Default 4 (the SDK's). */
  maxAttempts?: number;
  /** Files up to this size go in one Put Blob; larger ones as blocks. Default 256 MiB (the SDK's). */
  singleUploadMaxBytes?: number;
  /** Block size for block uploads, in bytes. Default: chosen by the SDK from the file size. */
  blockSizeBytes?: number;
}

const SERVICE = 'Azure Blob Storage';
// The account name becomes part of the host name, so only Azure's own account-name alphabet passes.
const ACCOUNT_NAME = /^[a-z0-9]{3,64}$/;

function readCredentials(credentials: unknown, side: Side): AzureCredentials {
  const accountName = stringField(credentials, 'accountName');
  const accountKey = stringField(credentials, 'accountKey');
  if (!accountName || !ACCOUNT_NAME.test(accountName) || !accountKey)
    throw credentialsError('azure://', side, 'accountName and accountKey');
  return { accountName, accountKey };
}

function facts(error: unknown): FailureFacts {
  if (error instanceof RestError) {
    // Transport failures are RestErrors too, with a Node error code and no status.
    if (error.statusCode === undefined) return {};
    const serviceCode = typeof error.code === 'string' ? error.code : undefined;
    return { status: error.statusCode, ...(serviceCode !== undefined && { serviceCode }) };
  }
  return {};
}

/** `azure://container/blob` with the caller's shared key. */
export function createAzureStoreFactory(
  options: AzureStoreOptions = {},
): (credentials: unknown) => MediaStore {
  const template = options.endpointTemplate ?? 'https://{accountName}.blob.core.windows.net';

  const containerFor = (credentials: unknown, side: Side, container: string): ContainerClient => {
    const { accountName, accountKey } = readCredentials(credentials, side);
    const endpoint = options.blobEndpoint ?? template.replaceAll('{accountName}', accountName);
    const service = new BlobServiceClient(
      endpoint,
      new StorageSharedKeyCredential(accountName, accountKey),
      {
        ...(options.maxAttempts !== undefined && {
          retryOptions: { maxTries: options.maxAttempts },
        }),
      },
    );
    return service.getContainerClient(container);
  };

  return (credentials) => ({
    download(url, destPath, { signal, maxBytes, onProgress }) {
      return mapTransferErrors(SERVICE, 'input', signal, facts, async () => {
        const { bucket, key } = parseBucketUrl(url, 'azure', 'input');
        const blob = containerFor(credentials, 'input', bucket).getBlobClient(key);
        // The download's own headers give the size; the body is read only when it fits.
        const res = await blob.download(0, undefined, { abortSignal: signal });
        const body = res.readableStreamBody;
        if (!(body instanceof Readable))
          throw new MediaError('input_unreachable', `${SERVICE} sent no body`);
        try {
          checkDeclaredSize(res.contentLength, maxBytes);
        } catch (error) {
          body.destroy();
          throw error;
        }
        const bytes = await bodyToFile(body, destPath, {
          signal,
          maxBytes,
          declared: res.contentLength,
          onProgress,
        });
        return { bytes };
      });
    },

    upload(srcPath, url, { signal, contentType, onProgress }) {
      return mapTransferErrors(SERVICE, 'output', signal, facts, async () => {
        const { bucket, key } = parseBucketUrl(url, 'azure', 'output');
        const blob = containerFor(credentials, 'output', bucket).getBlockBlobClient(key);
        const { size } = await stat(srcPath);
        const progress = throttledProgress(onProgress);
        // uploadFile reads the file in ranges from disk: never the whole file in memory.
        await blob.uploadFile(srcPath, {
          abortSignal: signal,
          blobHTTPHeaders: { blobContentType: contentType },
          onProgress: (p) => progress.report(p.loadedBytes),
          ...(options.singleUploadMaxBytes !== undefined && {
            maxSingleShotSize: options.singleUploadMaxBytes,
          }),
          ...(options.blockSizeBytes !== undefined && { blockSize: options.blockSizeBytes }),
        });
        progress.report(size);
        progress.flush();
        return { bytes: size };
      });
    },

    remove(url, { signal }) {
      return mapTransferErrors(SERVICE, 'output', signal, facts, async () => {
        const { bucket, key } = parseBucketUrl(url, 'azure', 'output');
        await containerFor(credentials, 'output', bucket)
          .getBlobClient(key)
          .deleteIfExists({ abortSignal: signal });
      });
    },
  });
}
