import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { finished, pipeline } from 'node:stream/promises';
import type { StreamSpec } from '../core/contracts/types.generated.ts';
import type { Rung } from '../core/media/ladder.ts';
import type { JobInput } from '../core/media/read-input.ts';
import type { MediaJobDeps } from '../core/media-job/media-job.ts';
import { reportQuality, type MeasuredOutput } from '../core/media-job/report-quality.ts';
import type { JobContext } from '../core/worker/job-handler.ts';
import { rungReference } from './build-ladder-args.ts';
import type { MeasuredRendition } from './measure-renditions.ts';
import type { WrittenLadder } from './write-ladder.ts';

/** The per-frame file of a rung, in its folder (published and removed with the stream). */
export const RUNG_FRAMES_FILE = 'quality.json';

/** Percent of the job the quality reports are measured at (the encode ends at 85). */
const QUALITY_PERCENT = 85;

export interface RungsToMeasure {
  spec: StreamSpec;
  input: JobInput;
  rungs: readonly Rung[];
  ladder: WrittenLadder;
  outDir: string;
  workDir: string;
  /** The stream's output prefix (the per-frame files' URLs are under it). */
  prefix: string;
}

/**
 * The quality report of each rung, by rung name (empty when switched off), one metrics ffmpeg
 * per rung: each has its own size, and a run per rung keeps one rung's failed VMAF from
 * costing the others theirs. A rung is read as one fMP4 file (its init, then its segments):
 * the HLS demuxer is not among the input formats ffmpeg may open. A per-frame file asked for
 * goes in the rung's folder as `quality.json`, for the stream's publish to upload.
 */
export async function measureRungs(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: RungsToMeasure,
): Promise<Map<string, MeasuredOutput>> {
  const reports = new Map<string, MeasuredOutput>();
  if (o.spec.quality?.report === false) return reports;
  for (const [k, rung] of o.rungs.entries()) {
    const rendition = o.ladder.renditions.find((r) => r.name === rung.name);
    if (!rendition) continue;
    const path = join(o.workDir, `quality-${rung.name}.mp4`);
    await joinRendition(join(o.outDir, rung.name), rendition, path);
    try {
      const measured = await reportQuality(deps, ctx, {
        asked: o.spec.quality,
        outputPath: path,
        outputUrl: o.prefix,
        durationSeconds: rendition.segments.reduce((n, s) => n + s.durationSeconds, 0),
        reference: rungReference(o.input, o.rungs, k),
        workDir: o.workDir,
        percent: QUALITY_PERCENT,
        framesAt: {
          path: join(o.outDir, rung.name, RUNG_FRAMES_FILE),
          url: `${o.prefix}${rung.name}/${RUNG_FRAMES_FILE}`,
        },
      });
      if (measured) reports.set(rung.name, measured);
    } finally {
      await rm(path, { force: true });
    }
  }
  return reports;
}

/** A CMAF rendition's init segment followed by its media segments, as one file at `path`. */
export async function joinRendition(
  dir: string,
  rendition: Pick<MeasuredRendition, 'init' | 'segments'>,
  path: string,
): Promise<void> {
  const out = createWriteStream(path);
  for (const file of [rendition.init, ...rendition.segments.map((s) => s.uri)])
    await pipeline(createReadStream(join(dir, file)), out, { end: false });
  out.end();
  await finished(out);
}
