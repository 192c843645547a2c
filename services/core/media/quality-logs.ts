// Readers of the per-frame logs the metrics ffmpeg writes. Read line by line: a two-hour output
// has some 200 000 frames, and libvmaf's log carries a dozen features beside each score.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** PSNR of a frame identical to its reference (ffmpeg writes `inf`), dB. */
export const PSNR_CEILING_DB = 100;

/** One frame of ffmpeg's psnr `stats_file` (`n` from 1). */
export interface PsnrFrame {
  n: number;
  mseY: number;
  psnrY: number;
}

/** One frame of ffmpeg's ssim `stats_file` (`n` from 1). */
export interface SsimFrame {
  n: number;
  ssimY: number;
}

/** One scored frame of libvmaf's CSV log (`frame` from 0). */
export interface VmafFrame {
  frame: number;
  vmaf: number;
}

/** `n:1 mse_avg:4.54 mse_y:6.09 … psnr_y:40.28 …`; undefined for anything else. */
export function parsePsnrLine(line: string): PsnrFrame | undefined {
  const n = field(line, 'n');
  const mseY = field(line, 'mse_y');
  const psnr = /(?:^|\s)psnr_y:(\S+)/.exec(line)?.[1];
  if (n === undefined || mseY === undefined || psnr === undefined) return undefined;
  const psnrY = psnr === 'inf' ? PSNR_CEILING_DB : Number(psnr);
  if (!Number.isFinite(psnrY)) return undefined;
  return { n, mseY, psnrY: Math.min(psnrY, PSNR_CEILING_DB) };
}

/** `n:1 Y:0.975850 U:0.981574 V:0.990617 All:0.979265 (16.83)`; undefined for anything else. */
export function parseSsimLine(line: string): SsimFrame | undefined {
  const n = field(line, 'n');
  const ssimY = field(line, 'Y');
  return n === undefined || ssimY === undefined ? undefined : { n, ssimY };
}

function field(line: string, name: string): number | undefined {
  const text = new RegExp(`(?:^|\\s)${name}:(\\S+)`).exec(line)?.[1];
  const value = text === undefined ? NaN : Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * A parser of libvmaf's CSV rows, given its header (`Frame,<features…>,vmaf,`): the columns
 * move between libvmaf versions, the two names do not.
 */
export function vmafRowParser(
  header: string,
): ((line: string) => VmafFrame | undefined) | undefined {
  const names = header.split(',').map((s) => s.trim());
  const frameAt = names.indexOf('Frame');
  const vmafAt = names.indexOf('vmaf');
  if (frameAt < 0 || vmafAt < 0) return undefined;
  return (line) => {
    const cells = line.split(',');
    const frame = Number(cells[frameAt]);
    const vmaf = Number(cells[vmafAt]);
    if (!Number.isInteger(frame) || !Number.isFinite(vmaf) || cells.length < names.length - 1)
      return undefined;
    return { frame, vmaf };
  };
}

/** The frames of a psnr stats file, in order. */
export async function readPsnrLog(path: string): Promise<PsnrFrame[]> {
  return readRows(path, parsePsnrLine);
}

/** The frames of an ssim stats file, in order. */
export async function readSsimLog(path: string): Promise<SsimFrame[]> {
  return readRows(path, parseSsimLine);
}

/** The scored frames of a libvmaf CSV log; throws when its header has no Frame or vmaf column. */
export async function readVmafLog(path: string): Promise<VmafFrame[]> {
  let parse: ((line: string) => VmafFrame | undefined) | undefined;
  return readRows(path, (line) => {
    if (parse) return parse(line);
    parse = vmafRowParser(line);
    if (!parse) throw new Error('the libvmaf log has no Frame and vmaf columns');
    return undefined;
  });
}

async function readRows<T>(path: string, parse: (line: string) => T | undefined): Promise<T[]> {
  const rows: T[] = [];
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of lines) {
    const row = parse(line);
    if (row !== undefined) rows.push(row);
  }
  return rows;
}
