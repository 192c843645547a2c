import { open, readFile } from 'node:fs/promises';
import { MediaError } from '../core/errors.ts';

/**
 * GIFs rendered in parts with one palette (the summary's, see build-summary-args.ts), joined
 * frame by frame into one: the first part whole but its trailer, then each later part's frames
 * (its blocks after the header, the global palette and the application extensions such as the
 * loop count) and one trailer. Each part's first frame is a whole picture (the encoder has no
 * frame before it to take a difference from), so the frames after a join draw as they would
 * in one file. The parts must share their screen size and global palette: they are all made
 * from the same palette file, and a part that differs fails the job rather than showing wrong
 * colours.
 */
export async function joinGifs(partPaths: readonly string[], outputPath: string): Promise<void> {
  const out = await open(outputPath, 'w');
  try {
    let head: Buffer | undefined;
    for (const path of partPaths) {
      const gif = await readFile(path);
      const layout = gifLayout(gif);
      const screen = gif.subarray(0, layout.framesStart);
      if (!head) {
        head = gif.subarray(0, layout.screenEnd);
        await out.write(screen);
      } else if (!gif.subarray(0, layout.screenEnd).equals(head))
        throw new MediaError('internal', 'the parts of a GIF differ in size or palette');
      await out.write(gif.subarray(layout.framesStart, layout.trailer));
    }
    await out.write(Buffer.from([TRAILER]));
  } finally {
    await out.close();
  }
}

const EXTENSION = 0x21;
const APPLICATION = 0xff;
const IMAGE = 0x2c;
const TRAILER = 0x3b;

/**
 * Where a GIF's parts lie: the header, screen descriptor and global palette end at `screenEnd`;
 * the application extensions after them end at `framesStart` (where the first frame's blocks
 * begin); the trailer is at `trailer`.
 */
export function gifLayout(gif: Buffer): {
  screenEnd: number;
  framesStart: number;
  trailer: number;
} {
  const bad = (what: string): MediaError =>
    new MediaError('internal', `a GIF part could not be read: ${what}`);
  const sig = gif.subarray(0, 6).toString('latin1');
  if (sig !== 'GIF89a' && sig !== 'GIF87a') throw bad('no GIF header');
  const flags = gif[10] ?? 0;
  const screenEnd = 13 + (flags & 0x80 ? 3 * 2 ** ((flags & 7) + 1) : 0);
  let at = screenEnd;
  let framesStart: number | undefined;
  /** The end of the data sub-blocks that begin at `from`. */
  const subBlocks = (from: number): number => {
    let p = from;
    for (;;) {
      const size = gif[p];
      if (size === undefined) throw bad('cut short');
      p += 1 + size;
      if (size === 0) return p;
    }
  };
  for (;;) {
    const block = gif[at];
    if (block === TRAILER) return { screenEnd, framesStart: framesStart ?? at, trailer: at };
    if (block === EXTENSION) {
      const label = gif[at + 1];
      if (label !== APPLICATION) framesStart ??= at;
      at = subBlocks(at + 2);
    } else if (block === IMAGE) {
      framesStart ??= at;
      const packed = gif[at + 9] ?? 0;
      const local = packed & 0x80 ? 3 * 2 ** ((packed & 7) + 1) : 0;
      // Descriptor (10 bytes), local palette, LZW code size (1 byte), then the data.
      at = subBlocks(at + 10 + local + 1);
    } else throw bad(`unknown block ${block ?? 'past the end'}`);
  }
}
