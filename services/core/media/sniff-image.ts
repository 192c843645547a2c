/** An image's type and size read from its own bytes (never from what the sender declares). */
export interface ImageFacts {
  type: ImageType;
  width: number;
  height: number;
}

export type ImageType = 'image/png' | 'image/jpeg' | 'image/webp';

// Header parsing, not decoding: the three formats state their size in the first bytes (JPEG in
// its frame header, after any metadata segments). Hand-written because it is this small and
// runs on untrusted bytes in the ingress, where spawning ffprobe per upload would cost more.
// The workers still probe every image with ffprobe before ffmpeg sees it.

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** JPEG start-of-frame markers (baseline, progressive, lossless, arithmetic), not DHT/JPG/DAC. */
const JPEG_SOF = new Set([
  0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf,
]);

function png(b: Buffer): ImageFacts | undefined {
  if (b.length < 24 || !b.subarray(0, 8).equals(PNG_SIGNATURE)) return undefined;
  if (b.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { type: 'image/png', width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

function jpeg(b: Buffer): ImageFacts | undefined {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8 || b[2] !== 0xff) return undefined;
  let at = 2;
  while (at + 4 <= b.length) {
    if (b[at] !== 0xff) return undefined;
    let marker = b[at + 1] ?? 0;
    while (marker === 0xff && at + 2 < b.length) marker = b[++at + 1] ?? 0;
    at += 2;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no length
    if (marker === 0xd9 || marker === 0xda || at + 2 > b.length) return undefined; // no frame
    const length = b.readUInt16BE(at);
    if (length < 2) return undefined;
    if (JPEG_SOF.has(marker)) {
      if (at + 7 > b.length) return undefined;
      return { type: 'image/jpeg', height: b.readUInt16BE(at + 3), width: b.readUInt16BE(at + 5) };
    }
    at += length;
  }
  return undefined;
}

function webp(b: Buffer): ImageFacts | undefined {
  if (b.length < 30 || b.toString('latin1', 0, 4) !== 'RIFF') return undefined;
  if (b.toString('latin1', 8, 12) !== 'WEBP') return undefined;
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8 ') {
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined;
    return {
      type: 'image/webp',
      width: b.readUInt16LE(26) & 0x3fff,
      height: b.readUInt16LE(28) & 0x3fff,
    };
  }
  if (chunk === 'VP8L') {
    if (b[20] !== 0x2f) return undefined;
    const bits = b.readUInt32LE(21);
    return { type: 'image/webp', width: 1 + (bits & 0x3fff), height: 1 + ((bits >>> 14) & 0x3fff) };
  }
  if (chunk === 'VP8X')
    return { type: 'image/webp', width: 1 + b.readUIntLE(24, 3), height: 1 + b.readUIntLE(27, 3) };
  return undefined;
}

/** The image's type and dimensions, or undefined when the bytes are not a png, jpeg or webp. */
export function sniffImage(bytes: Buffer): ImageFacts | undefined {
  const facts = png(bytes) ?? jpeg(bytes) ?? webp(bytes);
  return facts && facts.width > 0 && facts.height > 0 ? facts : undefined;
}
