/**
 * The few facts the manifests need from CMAF files, read from their boxes: the codec string of
 * an init segment's sample entry (RFC 6381), its track timescale, and a media segment's decode
 * start. The files are the ones this service just wrote (ffmpeg's mov muxer), small and whole.
 */

/** Start of the payload of the first box of `type` (after its size and type), or -1. */
function boxPayload(buf: Buffer, type: string, from = 0): number {
  let at = buf.indexOf(type, from, 'latin1');
  while (at >= 4) {
    const size = buf.readUInt32BE(at - 4);
    if (size >= 8 && at - 4 + size <= buf.length) return at + 4;
    at = buf.indexOf(type, at + 1, 'latin1');
  }
  return -1;
}

const hex2 = (n: number): string => n.toString(16).toUpperCase().padStart(2, '0');
const dec2 = (n: number): string => String(n).padStart(2, '0');

/** RFC 6381 codec string of the (one) track of an init segment, e.g. `avc1.64001F`. */
export function codecString(init: Buffer): string {
  const avcC = boxPayload(init, 'avcC');
  if (avcC >= 0) return `avc1.${[1, 2, 3].map((k) => hex2(init[avcC + k] ?? 0)).join('')}`;
  const hvcC = boxPayload(init, 'hvcC');
  if (hvcC >= 0) return hevcCodecString(init, hvcC);
  const vpcC = boxPayload(init, 'vpcC');
  if (vpcC >= 0) {
    // A full box: version and flags first; then profile, level, bit depth in the high nibble.
    const [profile, level, depth] = [init[vpcC + 4], init[vpcC + 5], init[vpcC + 6]];
    return `vp09.${dec2(profile ?? 0)}.${dec2(level ?? 0)}.${dec2((depth ?? 0x80) >> 4)}`;
  }
  // ffmpeg's AAC encoder writes AAC-LC (audio object type 2) only.
  if (boxPayload(init, 'mp4a') >= 0) return 'mp4a.40.2';
  throw new Error('the init segment has no sample entry this service writes');
}

/** `hvc1.<space><profile>.<compat, bits reversed>.<tier><level>.<constraint bytes>` (ISO 14496-15 E.3). */
function hevcCodecString(init: Buffer, at: number): string {
  const first = init[at + 1] ?? 0;
  const space = ['', 'A', 'B', 'C'][first >> 6] ?? '';
  const tier = first & 0x20 ? 'H' : 'L';
  const profile = first & 0x1f;
  let compat = init.readUInt32BE(at + 2);
  let reversed = 0;
  for (let k = 0; k < 32; k++) {
    reversed = (reversed << 1) | (compat & 1);
    compat >>>= 1;
  }
  const constraints = [...init.subarray(at + 6, at + 12)];
  while (constraints.length > 0 && constraints.at(-1) === 0) constraints.pop();
  const level = init[at + 12] ?? 0;
  return [
    `hvc1.${space}${profile}`,
    (reversed >>> 0).toString(16).toUpperCase(),
    `${tier}${level}`,
    ...constraints.map((b) => b.toString(16).toUpperCase()),
  ].join('.');
}

/** The track's timescale (units per second) from the init segment's `mdhd`. */
export function trackTimescale(init: Buffer): number {
  const at = boxPayload(init, 'mdhd');
  if (at < 0) throw new Error('the init segment has no mdhd');
  const version = init[at] ?? 0;
  return init.readUInt32BE(at + (version === 1 ? 20 : 12));
}

/** A media segment's first decode time, in its track's timescale (`tfdt`). */
export function segmentDecodeTime(segment: Buffer): number {
  const at = boxPayload(segment, 'tfdt');
  if (at < 0) throw new Error('the media segment has no tfdt');
  return (segment[at] ?? 0) === 1
    ? Number(segment.readBigUInt64BE(at + 4))
    : segment.readUInt32BE(at + 4);
}
