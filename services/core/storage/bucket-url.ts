import { MediaError } from '../errors.ts';

export type BucketScheme = 's3' | 'azure' | 'gcp';

/** A bucket location: `<scheme>://<bucket>/<key>`, the key taken verbatim (not percent-decoded). */
export interface BucketLocation {
  bucket: string;
  key: string;
}

// Each provider's own naming rules. The bucket can end up in a host name (S3 virtual-hosted
// style), so nothing outside these rules may pass.
const bucketRules: Record<BucketScheme, RegExp> = {
  s3: /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
  azure: /^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/,
  gcp: /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/,
};

/** Object keys are at most 1024 bytes of UTF-8 at all three providers. */
const MAX_KEY_BYTES = 1024;

/**
 * Splits `s3://bucket/some/key` into bucket and key. Keys are used as written, like the
 * providers' own CLIs do, so `%20` stays three characters. Rejects with `<side>_rejected`.
 */
export function parseBucketUrl(
  url: string,
  scheme: BucketScheme,
  side: 'input' | 'output',
): BucketLocation {
  const fail = (why: string): MediaError =>
    new MediaError(
      side === 'input' ? 'input_rejected' : 'output_rejected',
      `${side} location: ${why}`,
    );
  const prefix = `${scheme}://`;
  if (!url.startsWith(prefix)) throw fail(`expected a ${prefix} URL`);
  const rest = url.slice(prefix.length);
  const slash = rest.indexOf('/');
  if (slash < 0) throw fail(`expected ${prefix}<bucket>/<path>`);
  const bucket = rest.slice(0, slash);
  const key = rest.slice(slash + 1);
  if (!bucketRules[scheme].test(bucket))
    throw fail(`"${bucket}" is not a valid ${scheme} bucket name`);
  if (key === '' || key.endsWith('/')) throw fail('the path must name an object');
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES)
    throw fail(`the path is longer than ${MAX_KEY_BYTES} bytes`);
  if (/[\u0000-\u001f\u007f]/.test(key)) throw fail('the path contains control characters');
  return { bucket, key };
}
