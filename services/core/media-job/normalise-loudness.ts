import { join } from 'node:path';
import type { LoudnessOption, LoudnessReport } from '../contracts/types.generated.ts';
import type { JobContext } from '../worker/job-handler.ts';
import { audioTarget, type AudioEncoder } from '../media/audio-format.ts';
import {
  findLimitedGain,
  loudnessReport,
  measureLoudness,
  planLoudness,
  type LoudnessPlan,
} from '../media/loudness.ts';
import type { JobInput } from '../media/read-input.ts';
import { trimArgs } from '../media/trim.ts';
import type { MediaJobDeps } from './media-job.ts';

/**
 * The loudness step of a job that asked for one (loudness.ts): the input's audio measured as
 * the output will lay it out, and what the encode does about it (in the dynamic mode, the gain
 * found by measuring the limited audio again). Nothing without the option or without audio.
 */
export async function planJobLoudness(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: {
    asked: LoudnessOption | undefined;
    /** The job's input, or (`stream`: which of its audio streams) a file the job made. */
    input: Pick<JobInput, 'path' | 'info' | 'trim'> & { stream?: string };
    encoder: Exclude<AudioEncoder, 'pcm'>;
    workDir: string;
  },
): Promise<LoudnessPlan | undefined> {
  const audio = o.input.info.audio;
  if (!o.asked || !audio) return undefined;
  const measure = (filter?: string) =>
    measureLoudness(deps, ctx.signal, {
      path: o.input.path,
      stream: o.input.stream ?? String(audio.index),
      scratchPath: join(o.workDir, 'loudness-input.txt'),
      layout: audioTarget(audio, o.encoder).layout,
      ...(filter ? { filter } : {}),
      before: trimArgs(o.input.trim),
    });
  const measured = await measure();
  const first = planLoudness(measured, o.asked);
  const plan = first.mode === 'dynamic' ? await findLimitedGain(first, measure) : first;
  ctx.log.info('loudness.plan', {
    mode: plan.mode,
    targetLufs: plan.targetLufs,
    inputLufs: measured.integratedLufs,
    inputTruePeakDbtp: measured.truePeakDbtp,
    ...(plan.gainDb !== undefined ? { gainDb: plan.gainDb } : {}),
  });
  return plan;
}

/** The report of a plan: the output's first audio track measured. */
export async function reportLoudness(
  deps: MediaJobDeps,
  ctx: JobContext,
  plan: LoudnessPlan,
  o: { outputPath: string; workDir: string },
): Promise<LoudnessReport> {
  const output = await measureLoudness(deps, ctx.signal, {
    path: o.outputPath,
    stream: 'a:0',
    scratchPath: join(o.workDir, 'loudness-output.txt'),
  });
  return loudnessReport(plan, output);
}
