import type { MediaStore } from './media-store.ts';

type StoreFactory = (credentials: unknown) => MediaStore;

/**
 * A bucket store whose module (and cloud SDK, 10–35 MB of heap each) is imported on the first
 * transfer, not at start: most deployments use one store or none, and a process that never
 * touches `s3://` should not carry the AWS SDK. A failed import is tried again next time.
 */
export function lazyStoreFactory(load: () => Promise<StoreFactory>): StoreFactory {
  let loading: Promise<StoreFactory> | undefined;
  const factory = (): Promise<StoreFactory> =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
  return (credentials) => ({
    download: async (url, destPath, options) =>
      (await factory())(credentials).download(url, destPath, options),
    upload: async (srcPath, url, options) =>
      (await factory())(credentials).upload(srcPath, url, options),
    remove: async (url, options) => (await factory())(credentials).remove(url, options),
  });
}
