import { MediaError } from '../errors.ts';
import type { MediaStore, StoreResolver } from './media-store.ts';

/**
 * The store for a URL by its scheme. Bucket adapters are registered by scheme as they are
 * built; a scheme without one fails the job with a clear, non-retryable error.
 */
export function createStoreResolver(stores: {
  http: MediaStore;
  buckets?: Partial<Record<'s3' | 'azure' | 'gcp', (credentials: unknown) => MediaStore>>;
}): StoreResolver {
  return (url, credentials) => {
    const scheme = url.slice(0, url.indexOf(':'));
    if (scheme === 'http' || scheme === 'https') return stores.http;
    const make = stores.buckets?.[scheme as 's3' | 'azure' | 'gcp'];
    if (!make)
      throw new MediaError(
        'option_unsupported',
        `${scheme}:// locations are not supported by this deployment yet`,
      );
    return make(credentials);
  };
}
