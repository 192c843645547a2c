import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { WatermarkImage } from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import { sniffImage, type ImageFacts } from '../media/sniff-image.ts';

/**
 * Each organisation's named watermark images (PUT/GET/DELETE /watermarks), kept where every
 * ingress and worker copy reads the same ones: a folder (all-in-one, or a shared volume) or an
 * S3-compatible bucket (watermark-store.ts). Names are checked by the caller against
 * the `imageName` rule; organisation ids come from the API key or a checked event.
 */
export interface WatermarkLibrary {
  /** Stores (or replaces) an image already checked: its bytes and what they were found to be. */
  put(
    orgId: string,
    name: string,
    bytes: Buffer,
    facts: ImageFacts,
  ): Promise<{ image: WatermarkImage; created: boolean }>;
  /** The organisation's images, by name. */
  list(orgId: string): Promise<WatermarkImage[]>;
  /** Removes the image; false when the organisation has none by that name. */
  remove(orgId: string, name: string): Promise<boolean>;
  /**
   * Copies the image to `destPath` for a job. Rejects with `watermark_unavailable` when the
   * organisation has no image by that name (another organisation's is never found).
   */
  fetch(
    orgId: string,
    name: string,
    destPath: string,
    options: { signal: AbortSignal; maxBytes: number },
  ): Promise<void>;
}

/** The error a job gets for a name its organisation does not have. */
export function notInLibrary(name: string, cause?: unknown): MediaError {
  return new MediaError(
    'watermark_unavailable',
    `no watermark image named "${name}" for this organisation`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * `<dir>/<orgId>/<name>`, never outside `<dir>/<orgId>/`. The schemas already refuse ids and
 * names with a leading dot or a slash; events may come from other producers, so the path is
 * checked again where it is used.
 */
export function namedImagePath(dir: string, orgId: string, name: string): string {
  const folder = resolve(dir, orgId);
  const path = resolve(folder, name);
  if (folder === resolve(dir) || dirname(path) !== folder || basename(folder) !== orgId)
    throw notInLibrary(name);
  return path;
}

/** How much of a file is read to find its type and size (a JPEG's frame header follows its metadata). */
const SNIFF_BYTES = 1024 * 1024;

async function sniffFile(path: string): Promise<ImageFacts | undefined> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
    return sniffImage(buffer.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

const isMissing = (error: unknown): boolean =>
  (error as { code?: unknown } | null)?.code === 'ENOENT';

/**
 * `<dir>/<orgId>/<name>`, the layout WATERMARK_IMAGES_DIR always had, so images an operator put
 * there by hand keep working. Writes go to a dot-file (no name starts with a dot) and are renamed
 * into place, so a job never reads half an image.
 */
export function createFolderLibrary(dir: string): WatermarkLibrary {
  const entry = async (orgId: string, name: string): Promise<WatermarkImage | undefined> => {
    const path = namedImagePath(dir, orgId, name);
    const [info, facts] = await Promise.all([stat(path), sniffFile(path)]);
    if (!info.isFile() || !facts) return undefined;
    return { name, sizeBytes: info.size, ...facts, updatedAt: info.mtime.toISOString() };
  };
  return {
    async put(orgId, name, bytes, facts) {
      const path = namedImagePath(dir, orgId, name);
      const folder = join(path, '..');
      await mkdir(folder, { recursive: true });
      const created = await stat(path).then(
        () => false,
        (error: unknown) => {
          if (isMissing(error)) return true;
          throw error;
        },
      );
      const temporary = join(folder, `.upload-${randomBytes(8).toString('hex')}`);
      try {
        await writeFile(temporary, bytes, { flag: 'wx' });
        await rename(temporary, path);
      } finally {
        await rm(temporary, { force: true });
      }
      const updatedAt = (await stat(path)).mtime.toISOString();
      return { image: { name, sizeBytes: bytes.length, ...facts, updatedAt }, created };
    },

    async list(orgId) {
      const folder = join(namedImagePath(dir, orgId, 'x'), '..');
      const names = await readdir(folder).catch((error: unknown) => {
        if (isMissing(error)) return [];
        throw error;
      });
      const images = await Promise.all(
        names
          .filter((n) => !n.startsWith('.'))
          .sort()
          .map((n) => entry(orgId, n).catch(() => undefined)),
      );
      return images.filter((i): i is WatermarkImage => i !== undefined);
    },

    async remove(orgId, name) {
      const path = namedImagePath(dir, orgId, name);
      return rm(path).then(
        () => true,
        (error: unknown) => {
          if (isMissing(error)) return false;
          throw error;
        },
      );
    },

    // A local copy: the size was checked when the image was put (or by whoever put it there).
    async fetch(orgId, name, destPath) {
      await copyFile(namedImagePath(dir, orgId, name), destPath).catch((error: unknown) => {
        throw notInLibrary(name, error);
      });
    },
  };
}
