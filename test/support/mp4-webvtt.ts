import { readFile } from 'node:fs/promises';

/**
 * An MP4's WebVTT tracks (`wvtt` sample entries, ISO 14496-30), read from the file's boxes: the
 * ffmpeg of the tests (5.1, and 9.0 as well) reads such a track as a data stream it cannot decode,
 * so neither its cues nor its name can be checked with ffmpeg.
 */
export interface Mp4WebVttTrack {
  /** The media header's language (ISO 639-2). */
  language: string;
  /** The track's `udta/name`, if it has one. */
  name?: string;
  /** The track header's enabled flag (ffprobe's default disposition). */
  enabled: boolean;
  /** Each cue of each sample: [start, end] seconds and its text; empty samples (vtte) left out. */
  cues: [number, number, string][];
}

interface Box {
  type: string;
  /** Where its content starts and ends in the file. */
  start: number;
  end: number;
}

function children(file: Buffer, start: number, end: number): Box[] {
  const boxes: Box[] = [];
  for (let at = start; at + 8 <= end;) {
    let size = file.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      size = Number(file.readBigUInt64BE(at + 8));
      header = 16;
    }
    if (size === 0) size = end - at;
    boxes.push({
      type: file.toString('latin1', at + 4, at + 8),
      start: at + header,
      end: at + size,
    });
    at += size;
  }
  return boxes;
}

function child(file: Buffer, parent: Box, path: string[]): Box | undefined {
  let box: Box | undefined = parent;
  for (const type of path)
    box = box && children(file, box.start, box.end).find((b) => b.type === type);
  return box;
}

function must(box: Box | undefined, what: string): Box {
  if (!box) throw new Error(`the MP4 has no ${what} box`);
  return box;
}

/** The WebVTT tracks of the MP4 at `path`, in track order. */
export async function mp4WebVttTracks(path: string): Promise<Mp4WebVttTrack[]> {
  const file = await readFile(path);
  const moov = must(
    children(file, 0, file.length).find((b) => b.type === 'moov'),
    'moov',
  );
  const tracks: Mp4WebVttTrack[] = [];
  for (const trak of children(file, moov.start, moov.end).filter((b) => b.type === 'trak')) {
    const stbl = must(child(file, trak, ['mdia', 'minf', 'stbl']), 'stbl');
    const stsd = must(child(file, stbl, ['stsd']), 'stsd');
    // stsd: version and flags, entry count, then the sample entries.
    if (file.toString('latin1', stsd.start + 12, stsd.start + 16) !== 'wvtt') continue;
    // An edit list would move the samples' times; mediabunny writes none on these tracks.
    if (child(file, trak, ['edts'])) throw new Error('a wvtt track with an edit list: not read');
    const mdhd = must(child(file, trak, ['mdia', 'mdhd']), 'mdhd');
    const long = file.readUInt8(mdhd.start) === 1;
    const timescale = file.readUInt32BE(mdhd.start + (long ? 20 : 12));
    const packed = file.readUInt16BE(mdhd.start + (long ? 32 : 20));
    const language = [10, 5, 0]
      .map((shift) => String.fromCharCode(((packed >> shift) & 31) + 0x60))
      .join('');
    const tkhd = must(child(file, trak, ['tkhd']), 'tkhd');
    const name = child(file, trak, ['udta', 'name']);
    tracks.push({
      language,
      ...(name ? { name: file.toString('utf8', name.start, name.end) } : {}),
      enabled: (file.readUInt32BE(tkhd.start) & 1) === 1,
      cues: cuesOf(file, stbl, timescale),
    });
  }
  return tracks;
}

/** The samples' cues, from the sample tables (stts, stsz, stsc, stco or co64). */
function cuesOf(file: Buffer, stbl: Box, timescale: number): [number, number, string][] {
  const table = (type: string): Box => must(child(file, stbl, [type]), type);
  const entries = (box: Box, width: number, skip = 0): number[][] =>
    Array.from({ length: file.readUInt32BE(box.start + 4 + skip) }, (_, i) =>
      Array.from({ length: width }, (_, j) =>
        file.readUInt32BE(box.start + 8 + skip + (i * width + j) * 4),
      ),
    );
  const durations = entries(table('stts'), 2).flatMap(([count = 0, delta = 0]) =>
    Array<number>(count).fill(delta),
  );
  const stsz = table('stsz');
  const fixed = file.readUInt32BE(stsz.start + 4);
  const sizes = fixed ? durations.map(() => fixed) : entries(stsz, 1, 4).map(([size = 0]) => size);
  const co64 = child(file, stbl, ['co64']);
  const chunks = co64
    ? entries(co64, 2).map(([high = 0, low = 0]) => high * 2 ** 32 + low)
    : entries(table('stco'), 1).map(([offset = 0]) => offset);
  const runs = entries(table('stsc'), 3);
  const offsets: number[] = [];
  chunks.forEach((offset, c) => {
    const run = runs.filter(([first = 0]) => first <= c + 1).at(-1);
    let at = offset;
    for (let k = 0; k < (run?.[1] ?? 0); k++) {
      offsets.push(at);
      at += sizes[offsets.length - 1] ?? 0;
    }
  });
  const cues: [number, number, string][] = [];
  let time = 0;
  durations.forEach((duration, k) => {
    const start = offsets[k] ?? 0;
    for (const vttc of children(file, start, start + (sizes[k] ?? 0)).filter(
      (b) => b.type === 'vttc',
    )) {
      const payl = children(file, vttc.start, vttc.end).find((b) => b.type === 'payl');
      const text = payl ? file.toString('utf8', payl.start, payl.end) : '';
      cues.push([time / timescale, (time + duration) / timescale, text]);
    }
    time += duration;
  });
  return cues;
}
