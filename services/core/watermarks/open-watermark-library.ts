import { ConfigError, type Config } from '../config.ts';
import type { WatermarkBucketOptions } from './watermark-store.ts';
import { createFolderLibrary, type WatermarkLibrary } from './watermark-library.ts';

/**
 * The watermark library the configuration names: WATERMARK_BUCKET (S3-compatible; what copies on
 * Kafka share), else WATERMARK_IMAGES_DIR, else `fallbackDir` (all-in-one: `$DATA_DIR/watermarks`,
 * the one process that reads it), else none: PUT /watermarks answers that it is not set up and a
 * job naming an image fails with `watermark_unavailable`.
 */
export function openWatermarkLibrary(
  config: Readonly<Config>,
  fallbackDir?: string,
): WatermarkLibrary | undefined {
  if (config.watermarkBucket) {
    const endpoint = config.watermarkS3Endpoint ?? config.s3Endpoint;
    const accessKeyId = config.watermarkS3AccessKeyId;
    const secretAccessKey = config.watermarkS3SecretAccessKey;
    if (!accessKeyId !== !secretAccessKey)
      throw new ConfigError(
        'WATERMARK_S3_ACCESS_KEY_ID and WATERMARK_S3_SECRET_ACCESS_KEY go together: set both or neither',
      );
    return lazyBucketLibrary({
      bucket: config.watermarkBucket,
      region: config.watermarkS3Region,
      ...(endpoint !== undefined && { endpoint }),
      ...(accessKeyId && secretAccessKey && { credentials: { accessKeyId, secretAccessKey } }),
    });
  }
  const dir = config.watermarkImagesDir ?? fallbackDir;
  return dir === undefined ? undefined : createFolderLibrary(dir);
}

/**
 * The bucket library with its module (and the AWS SDK, ≈ 30 MB of RSS) imported on first use,
 * like the job stores (storage/lazy-store.ts): a process that never touches the library does not
 * carry the SDK. A failed import is tried again next time.
 */
function lazyBucketLibrary(options: WatermarkBucketOptions): WatermarkLibrary & { close(): void } {
  type BucketLibrary = WatermarkLibrary & { close(): void };
  let loaded: BucketLibrary | undefined;
  let loading: Promise<BucketLibrary> | undefined;
  let closed = false;
  const library = (): Promise<BucketLibrary> =>
    (loading ??= import('./watermark-store.ts').then(
      ({ createBucketLibrary }) => {
        if (closed) throw new Error('the watermark library is closed');
        return (loaded = createBucketLibrary(options));
      },
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    ));
  return {
    put: async (...args) => (await library()).put(...args),
    list: async (orgId) => (await library()).list(orgId),
    remove: async (orgId, name) => (await library()).remove(orgId, name),
    fetch: async (...args) => (await library()).fetch(...args),
    close() {
      closed = true;
      loaded?.close();
    },
  };
}
