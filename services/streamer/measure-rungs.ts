import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { StreamSpec } from '../core/contracts/types.generated.ts';
import type { Rung } from './ladder.ts';
import type { JobInput } from '../core/media/read-input.ts';
import type { MediaJobDeps } from '../core/media-job/media-job.ts';
import {
  reportQualities,
  type MeasuredOutput,
  type OutputToReport,
} from '../core/media-job/report-quality.ts';
import type { JobContext } from '../core/worker/job-handler.ts';
import { ladderReference } from './build-ladder-args.ts';
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
 * The quality report of each rung, by rung name (empty when switched off), all from one metrics
 * ffmpeg: the input is decoded once into the top rung's picture and split to every rung's size,
 * as the ladder's encode did (a run per rung decoded it once per rung: as much CPU as the
 * encode). A rung is read as one fMP4 file (its init, then its segments): the HLS demuxer is
 * not among the input formats ffmpeg may open. A per-frame file asked for goes in the rung's
 * folder as `quality.json`, for the stream's publish to upload.
 */
export async function measureRungs(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: RungsToMeasure,
): Promise<Map<string, MeasuredOutput>> {
  const reports = new Map<string, MeasuredOutput>();
  if (o.spec.quality?.report === false) return reports;
  const { reference, rungFilters } = ladderReference(o.input, o.rungs);
  const measured: { name: string; output: OutputToReport }[] = [];
  try {
    for (const [k, rung] of o.rungs.entries()) {
      const rendition = o.ladder.renditions.find((r) => r.name === rung.name);
      if (!rendition) continue;
      const outputPath = join(o.workDir, `quality-${rung.name}.mp4`);
      measured.push({ name: rung.name, output: rungOutput(o, rung, outputPath, rungFilters[k]) });
      await joinRendition(join(o.outDir, rung.name), rendition, outputPath);
    }
    if (measured.length === 0) return reports;
    const top = o.ladder.renditions.find((r) => r.name === measured[0]?.name);
    const results = await reportQualities(deps, ctx, {
      asked: o.spec.quality,
      outputs: measured.map((m) => m.output),
      reference,
      durationSeconds: top?.segments.reduce((n, s) => n + s.durationSeconds, 0) ?? 0,
      workDir: o.workDir,
      percent: QUALITY_PERCENT,
    });
    for (const [k, m] of measured.entries()) {
      const result = results?.[k];
      if (result) reports.set(m.name, result);
    }
    return reports;
  } finally {
    await Promise.all(measured.map((m) => rm(m.output.outputPath, { force: true })));
  }
}

/** A rung as an output to report on: its joined file, its scale, its per-frame file's place. */
function rungOutput(
  o: RungsToMeasure,
  rung: Rung,
  outputPath: string,
  referenceFilter: string | undefined,
): OutputToReport {
  return {
    outputPath,
    outputUrl: o.prefix,
    ...(referenceFilter ? { referenceFilter } : {}),
    framesAt: {
      path: join(o.outDir, rung.name, RUNG_FRAMES_FILE),
      url: `${o.prefix}${rung.name}/${RUNG_FRAMES_FILE}`,
    },
  };
}

/** A CMAF rendition's init segment followed by its media segments, as one file at `path`. */
export async function joinRendition(
  dir: string,
  rendition: Pick<MeasuredRendition, 'init'> & { segments: readonly { uri: string }[] },
  path: string,
): Promise<void> {
  const files = [rendition.init, ...rendition.segments.map((s) => s.uri)];
  // One pipeline over every file: a pipeline per file into one writer left a listener on it per
  // segment (Node warned past ten).
  await pipeline(
    Readable.from(
      (async function* () {
        for (const file of files) yield* createReadStream(join(dir, file));
      })(),
    ),
    createWriteStream(path),
  );
}
