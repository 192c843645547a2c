/**
 * Caption files as cues: SubRip and WebVTT read (strictly enough to refuse a broken file, as
 * players would show nothing or garbage), cut to a trim, and written as WebVTT. Pure.
 */

/** One cue: times in milliseconds from the start of the media. */
export interface Cue {
  startMs: number;
  endMs: number;
  /** WebVTT cue settings (`line:0 align:start`), kept as written; none for SubRip. */
  settings?: string;
  /** The cue's text lines (never empty lines: a blank line ends a cue in both formats). */
  lines: string[];
}

/** A caption file that cannot be read; its message says why, without naming the file. */
export class CaptionFormatError extends Error {
  override name = 'CaptionFormatError';
}

export type CaptionFormat = 'webvtt' | 'subrip';

/**
 * Reads `bytes` as UTF-8 (a BOM allowed) SubRip or WebVTT; refuses anything else, and a file
 * without cues unless `allowNoCues` (a track of the input may be silent in the part used).
 */
export function parseCaptions(
  bytes: Uint8Array,
  { allowNoCues = false }: { allowNoCues?: boolean } = {},
): { format: CaptionFormat; cues: Cue[] } {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new CaptionFormatError('is not UTF-8 text', { cause });
  }
  text = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  if (text.trim() === '' && !allowNoCues) throw new CaptionFormatError('is empty');
  const webvtt = /^WEBVTT(?:[ \t\n]|$)/.test(text);
  const cues = webvtt ? readWebVtt(text) : readSubRip(text);
  if (cues.length === 0 && !allowNoCues) throw new CaptionFormatError('holds no cues');
  return { format: webvtt ? 'webvtt' : 'subrip', cues };
}

// [hh:]mm:ss.mmm in WebVTT; hh:mm:ss,mmm in SubRip, where writers also use a dot.
const VTT_TIME = String.raw`(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})`;
const SRT_TIME = String.raw`(\d{1,3}):([0-5]?\d):([0-5]?\d)[,.](\d{1,3})`;
const VTT_TIMING = new RegExp(String.raw`^${VTT_TIME}[ \t]+-->[ \t]+${VTT_TIME}(?:[ \t]+(.*))?$`);
const SRT_TIMING = new RegExp(String.raw`^\s*${SRT_TIME}\s*-->\s*${SRT_TIME}(?:\s+.*)?$`);

function readWebVtt(text: string): Cue[] {
  const [, ...blocks] = text.split(/\n{2,}/);
  const cues: Cue[] = [];
  for (const block of blocks) {
    const lines = block.split('\n').filter((line) => line !== '');
    if (lines.length === 0) continue;
    const [first = ''] = lines;
    if (/^(NOTE|STYLE|REGION)(?:[ \t]|$)/.test(first) && !first.includes('-->')) continue;
    const timingAt = first.includes('-->') ? 0 : 1;
    const timing = lines[timingAt];
    const match = timing === undefined ? null : VTT_TIMING.exec(timing);
    if (!match)
      throw new CaptionFormatError(
        `has a cue without a valid timing line: "${clip(timing ?? first)}"`,
      );
    const startMs = toMs(match.slice(1, 5));
    const endMs = toMs(match.slice(5, 9));
    const settings = match[9]?.trim();
    cues.push(
      checked(
        { startMs, endMs, ...(settings ? { settings } : {}), lines: lines.slice(timingAt + 1) },
        timing ?? '',
      ),
    );
  }
  return cues;
}

function readSubRip(text: string): Cue[] {
  const cues: Cue[] = [];
  for (const block of text.split(/\n[ \t]*\n/)) {
    const lines = block.split('\n');
    while (lines[0]?.trim() === '') lines.shift();
    if (lines.length === 0) continue;
    const [first = ''] = lines;
    const timingAt = /^\s*\d+\s*$/.test(first) ? 1 : 0;
    const timing = lines[timingAt];
    const match = timing === undefined ? null : SRT_TIMING.exec(timing);
    if (!match)
      throw new CaptionFormatError(
        `is neither WebVTT nor SubRip: a cue without a valid timing line: "${clip(timing ?? first)}"`,
      );
    const startMs = toMs(match.slice(1, 5));
    const endMs = toMs(match.slice(5, 9));
    const body = lines.slice(timingAt + 1).filter((line) => line.trim() !== '');
    cues.push(checked({ startMs, endMs, lines: body }, timing ?? ''));
  }
  return cues;
}

/** hh, mm, ss and a fraction of a second written with 1 to 3 digits ("5" is 500 ms). */
function toMs([h, m, s, fraction]: (string | undefined)[]): number {
  const ms = Number((fraction ?? '0').padEnd(3, '0'));
  return ((Number(h ?? 0) * 60 + Number(m)) * 60 + Number(s)) * 1000 + ms;
}

function checked(cue: Cue, timing: string): Cue {
  if (cue.endMs < cue.startMs)
    throw new CaptionFormatError(`has a cue that ends before it starts: "${clip(timing)}"`);
  return cue;
}

const clip = (line: string): string => (line.length > 60 ? `${line.slice(0, 57)}...` : line);

/**
 * The cues seen in a part of the media (`startMs` for `durationMs`), on the part's timeline:
 * cues outside it dropped, those across its edges cut to them.
 */
export function trimCues(
  cues: readonly Cue[],
  part: { startMs: number; durationMs: number },
): Cue[] {
  const end = part.startMs + part.durationMs;
  return cues
    .filter((cue) => cue.endMs > part.startMs && cue.startMs < end)
    .map((cue) => ({
      ...cue,
      startMs: Math.max(cue.startMs, part.startMs) - part.startMs,
      endMs: Math.min(cue.endMs, end) - part.startMs,
    }));
}

/** The cues as a WebVTT file. */
export function writeWebVtt(cues: readonly Cue[]): string {
  const blocks = cues.map((cue) => {
    const timing = `${vttTime(cue.startMs)} --> ${vttTime(cue.endMs)}${cue.settings ? ` ${cue.settings}` : ''}`;
    // "-->" cannot stand in a WebVTT cue's text; SubRip allows it.
    return [timing, ...cue.lines.map((line) => line.replaceAll('-->', '--&gt;'))].join('\n');
  });
  return `WEBVTT\n\n${blocks.join('\n\n')}\n`;
}

function vttTime(ms: number): string {
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor(ms / 60_000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  return `${pad(h)}:${pad(m)}:${pad(s)}.${pad(ms % 1000, 3)}`;
}
