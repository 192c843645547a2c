import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Watermark } from '../contracts/types.generated.ts';
import { MediaError } from '../errors.ts';
import type { MediaStore } from '../storage/media-store.ts';
import type { WatermarkLibrary } from './watermark-library.ts';
import type { Prober } from '../media/probe-media.ts';
import { safePath } from '../media/safe-path.ts';

const MARGIN = 16;
const IMAGE_MAX_BYTES = 10 * 1024 * 1024;
const IMAGE_FORMATS = new Set(['png_pipe', 'jpeg_pipe', 'webp_pipe', 'image2']);

/** A watermark as ffmpeg filters: applied to stream `[in]`, the result is `[out]`. */
export interface PreparedWatermark {
  /** Extra `-i` inputs (an image), to add after the command's own inputs. */
  inputs: string[];
  /**
   * A filtergraph fragment from `[in]` to `[out]`, given the index the first of `inputs` gets in
   * the command (1 after a single input; the number of clips in a summary).
   */
  filter: (firstInput: number) => string;
}

export interface WatermarkDeps {
  http: MediaStore;
  probe: Prober;
  fontFile: string;
  /** The organisations' named images (unset: named images unavailable). */
  library: WatermarkLibrary | undefined;
  signal: AbortSignal;
}

function corner(position: Watermark['position'], w: string, h: string): string {
  const x = position === 'topLeft' || position === 'bottomLeft' ? `${MARGIN}` : `${w}-${MARGIN}`;
  const y = position === 'topLeft' || position === 'topRight' ? `${MARGIN}` : `${h}-${MARGIN}`;
  return `x=${x}:y=${y}`;
}

export async function prepareWatermark(
  watermark: Watermark,
  orgId: string,
  workDir: string,
  deps: WatermarkDeps,
): Promise<PreparedWatermark> {
  const opacity = Math.max(0, Math.min(1, watermark.opacity ?? 0.9));
  const position = watermark.position ?? 'bottomRight';
  if ('text' in watermark) {
    // The caller's text goes through a file with expansion off, so %, quotes and colons stay literal.
    const textFile = join(workDir, 'watermark.txt');
    await writeFile(textFile, watermark.text, 'utf8');
    const color = (watermark.fontColor ?? 'white').replace('#', '0x');
    const at = corner(position, 'w-tw', 'h-th');
    return {
      inputs: [],
      filter: () =>
        `[in]drawtext=fontfile=${safePath(deps.fontFile)}:textfile=${safePath(textFile)}:expansion=none:fontsize=${watermark.fontSize}:fontcolor=${color}@${opacity}:${at}[out]`,
    };
  }
  const image = join(workDir, 'watermark-image');
  if ('imageUrl' in watermark) {
    await deps.http
      .download(watermark.imageUrl, image, { signal: deps.signal, maxBytes: IMAGE_MAX_BYTES })
      .catch((error: unknown) => {
        // Only a MediaError's message is written for callers; anything else may name local paths.
        const why = error instanceof MediaError ? `: ${error.message}` : '';
        throw new MediaError(
          'watermark_unavailable',
          `the watermark image could not be fetched${why}`,
          { cause: error },
        );
      });
  } else {
    if (!deps.library)
      throw new MediaError(
        'watermark_unavailable',
        `named watermark images are not set up on this service (imageName "${watermark.imageName}")`,
      );
    await deps.library
      .fetch(orgId, watermark.imageName, image, { signal: deps.signal, maxBytes: IMAGE_MAX_BYTES })
      .catch((error: unknown) => {
        if (error instanceof MediaError && error.code === 'watermark_unavailable') throw error;
        throw new MediaError(
          'watermark_unavailable',
          `the watermark image "${watermark.imageName}" could not be read`,
          { cause: error },
        );
      });
  }
  let probeError: unknown;
  const info = await deps.probe(image).catch((error: unknown) => void (probeError = error));
  if (
    !info ||
    !IMAGE_FORMATS.has(info.formatName) ||
    !info.video ||
    !['png', 'mjpeg', 'webp'].includes(info.video.codec)
  )
    throw new MediaError(
      'watermark_unavailable',
      'the watermark image must be a png, jpeg or webp image',
      probeError === undefined ? undefined : { cause: probeError },
    );
  const at = corner(position, 'main_w-overlay_w', 'main_h-overlay_h');
  return {
    inputs: [safePath(image)],
    filter: (firstInput) =>
      `[${firstInput}:v]scale=${watermark.width}:${watermark.height},format=rgba,colorchannelmixer=aa=${opacity}[wm];[in][wm]overlay=${at}:format=auto[out]`,
  };
}
