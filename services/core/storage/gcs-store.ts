import { stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError, Storage, type Bucket } from '@google-cloud/storage';
import { parseBucketUrl } from './bucket-url.ts';
import {
  bodyToFile,
  checkDeclaredSize,
  credentialsError,
  fileSource,
  mapTransferErrors,
  stringField,
  throttledProgress,
  untilAborted,
  type FailureFacts,
  type Side,
} from './bucket-transfer.ts';
import type { MediaStore } from './media-store.ts';

/** Service configuration for `gcp://` locations; never taken from the caller. */
export interface GcsStoreOptions {
  /** JSON API endpoint of an emulator or private endpoint, e.g. `http://127.0.0.1:4443`. Default Google's. */
  apiEndpoint?: string;
  /**
   * Sign requests to a custom apiEndpoint too. The SDK sends none to custom endpoints by
   * default, which is what emulators want. Default false.
   */
  authWithCustomEndpoint?: boolean;
  /** Files of at least this many bytes go up as resumable uploads, smaller ones in one request. Default 8 MiB; 0 = always resumable. */
  resumableThresholdBytes?: number;
  /** Retries after the first attempt, for requests the SDK deems safe to repeat. Default 3 (the SDK's). */
  maxRetries?: number;
}

const SERVICE = 'Cloud Storage';

interface ServiceAccount {
  projectId: string;
  clientEmail: string;
  privateKey: string;
}

function readCredentials(credentials: unknown, side: Side): ServiceAccount {
  const type = stringField(credentials, 'type');
  const projectId = stringField(credentials, 'project_id');
  const clientEmail = stringField(credentials, 'client_email');
  const privateKey = stringField(credentials, 'private_key');
  if (type !== 'service_account' || !projectId || !clientEmail || !privateKey)
    throw credentialsError(
      'gcp://',
      side,
      'a service-account key (type service_account, project_id, client_email, private_key)',
    );
  return { projectId, clientEmail, privateKey };
}

function facts(error: unknown): FailureFacts {
  if (error instanceof ApiError && typeof error.code === 'number') return { status: error.code };
  const code = (error as { code?: unknown; status?: unknown } | null)?.code;
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'number') return { status };
  // An unreadable private key fails in OpenSSL before any request is made.
  if (typeof code === 'string' && code.startsWith('ERR_OSSL')) return { badCredentials: true };
  if (typeof code === 'number' && code >= 100 && code < 600) return { status: code };
  return {};
}

/** `gcp://bucket/object` with the caller's service-account key. */
export function createGcsStoreFactory(
  options: GcsStoreOptions = {},
): (credentials: unknown) => MediaStore {
  const resumableThreshold = options.resumableThresholdBytes ?? 8 * 1024 * 1024;

  const bucketFor = (credentials: unknown, side: Side, bucket: string): Bucket => {
    const account = readCredentials(credentials, side);
    const storage = new Storage({
      projectId: account.projectId,
      // Only the key itself: other fields of a key document (universe_domain, token_uri,
      // external-account sources) would let the caller point the client elsewhere.
      credentials: { client_email: account.clientEmail, private_key: account.privateKey },
      ...(options.apiEndpoint !== undefined && { apiEndpoint: options.apiEndpoint }),
      ...(options.authWithCustomEndpoint !== undefined && {
        useAuthWithCustomEndpoint: options.authWithCustomEndpoint,
      }),
      // The SDK reads `maxRetries: 0` as "unset" (and retries 3 times), so 0 turns retries off instead.
      ...(options.maxRetries !== undefined && {
        retryOptions:
          options.maxRetries === 0 ? { autoRetry: false } : { maxRetries: options.maxRetries },
      }),
    });
    return storage.bucket(bucket);
  };

  return (credentials) => ({
    download(url, destPath, { signal, maxBytes, onProgress }) {
      return mapTransferErrors(SERVICE, 'input', signal, facts, async () => {
        const { bucket, key } = parseBucketUrl(url, 'gcp', 'input');
        const handle = bucketFor(credentials, 'input', bucket);
        const [metadata] = await untilAborted(handle.file(key).getMetadata(), signal, 'input');
        const declared = metadata.size === undefined ? undefined : Number(metadata.size);
        checkDeclaredSize(declared, maxBytes);
        // Not pinned to the generation just read: an object replaced in between then shows as a
        // length mismatch (retryable) or too large, instead of a 404 that would not be retried.
        const body = handle.file(key).createReadStream();
        const bytes = await bodyToFile(body, destPath, { signal, maxBytes, declared, onProgress });
        return { bytes };
      });
    },

    upload(srcPath, url, { signal, contentType, onProgress }) {
      return mapTransferErrors(SERVICE, 'output', signal, facts, async () => {
        const { bucket, key } = parseBucketUrl(url, 'gcp', 'output');
        const { size } = await stat(srcPath);
        const file = bucketFor(credentials, 'output', bucket).file(key);
        const progress = throttledProgress(onProgress);
        let sent = 0;
        const counter = new Transform({
          transform(chunk: Buffer, _enc, done) {
            sent += chunk.length;
            progress.report(sent);
            done(null, chunk);
          },
        });
        // The write stream finishes only once the service has stored the object.
        const sink = file.createWriteStream({
          resumable: size >= resumableThreshold,
          contentType,
          validation: 'crc32c',
        });
        await pipeline(fileSource(srcPath, signal, 'output'), counter, sink, { signal });
        progress.flush();
        return { bytes: size };
      });
    },

    remove(url, { signal }) {
      return mapTransferErrors(SERVICE, 'output', signal, facts, async () => {
        const { bucket, key } = parseBucketUrl(url, 'gcp', 'output');
        await bucketFor(credentials, 'output', bucket).file(key).delete({ ignoreNotFound: true });
      });
    },
  });
}
