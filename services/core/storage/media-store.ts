/** Reads job inputs and writes job outputs, wherever the caller keeps them. */
export interface MediaStore {
  /** Streams the object at `url` into `destPath`; rejects with MediaError (input_*). */
  download(
    url: string,
    destPath: string,
    options: TransferOptions & { maxBytes: number },
  ): Promise<{ bytes: number }>;
  /** Streams `srcPath` to `url`, replacing what is there; rejects with MediaError (output_*). */
  upload(
    srcPath: string,
    url: string,
    options: TransferOptions & { contentType: string },
  ): Promise<{ bytes: number }>;
  /**
   * Removes the object at `url` if it is there (what a failed stream publish had uploaded);
   * resolves when it is gone or was never there; rejects with MediaError (output_*).
   */
  remove(url: string, options: { signal: AbortSignal }): Promise<void>;
}

export interface TransferOptions {
  signal: AbortSignal;
  /** Bytes moved so far, called at most a few times a second. */
  onProgress?: (bytes: number) => void;
}

/** Picks the store for a URL's scheme; credentials are the opened credentials object, if any. */
export type StoreResolver = (url: string, credentials: unknown) => MediaStore;
