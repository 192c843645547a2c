import { ConfigError, type Config } from '../config.ts';
import { createBucketLibrary } from '../storage/watermark-store.ts';
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
    return createBucketLibrary({
      bucket: config.watermarkBucket,
      region: config.watermarkS3Region,
      ...(endpoint !== undefined && { endpoint }),
      ...(accessKeyId && secretAccessKey && { credentials: { accessKeyId, secretAccessKey } }),
    });
  }
  const dir = config.watermarkImagesDir ?? fallbackDir;
  return dir === undefined ? undefined : createFolderLibrary(dir);
}
