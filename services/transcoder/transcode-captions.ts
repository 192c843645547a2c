import { dirname } from 'node:path';
import type { CaptionsReport, TranscodeSpec } from '../core/contracts/types.generated.ts';
import { MediaError } from '../core/errors.ts';
import { burnInTrack, type CaptionTrack } from '../core/media/captions.ts';
import { fontFamily } from '../core/media/font-family.ts';
import { iso639Part2 } from '../core/media/language-codes.ts';
import type { MediaInfo } from '../core/media/media-info.ts';
import type { JobInput } from '../core/media/read-input.ts';
import { jobCaptions } from '../core/media-job/job-captions.ts';
import type { MediaJobDeps } from '../core/media-job/media-job.ts';
import type { JobContext } from '../core/worker/job-handler.ts';
import { burnInMarginPx, type TranscodeCaptions } from './caption-args.ts';
import { needsRemux, type OutputSize } from './build-transcode-args.ts';

/**
 * A transcode's captions made ready (captions.ts): undefined when the request has no `captions`
 * and the input no text subtitle stream, so such a job runs exactly as before captions existed.
 */
export async function transcodeCaptions(
  deps: MediaJobDeps,
  ctx: JobContext,
  o: { spec: TranscodeSpec; input: JobInput; size: OutputSize; workDir: string },
): Promise<TranscodeCaptions | undefined> {
  const { spec } = o;
  const prepared = await jobCaptions(deps, ctx, { ...o, captions: spec.captions });
  if (!prepared) return undefined;
  const { tracks } = prepared;
  const burned = await burnInTrack(prepared.deps, prepared.job, tracks);
  if (!burned) return { tracks };
  const fontName = await fontFamily(deps.fontFile).catch((error: unknown) => {
    ctx.log.warn('captions.font_unreadable', { error });
    return undefined;
  });
  return {
    tracks,
    burnIn: {
      track: burned,
      fontsDir: dirname(deps.fontFile),
      fontName,
      marginPx: burnInMarginPx(spec.watermark, o.size.height),
    },
  };
}

/**
 * The captions part of the result, once the output's subtitle streams are checked against the
 * tracks written (output_invalid when a track is missing).
 */
export function captionsReport(
  captions: TranscodeCaptions,
  spec: Pick<TranscodeSpec, 'encoder' | 'container'>,
  out: MediaInfo,
): CaptionsReport {
  const { codec, probed } = captionCodec(spec);
  const found = (out.subtitleStreams ?? []).filter((s) => s.codec === probed).length;
  if (found !== captions.tracks.length)
    throw new MediaError(
      'output_invalid',
      `the output failed verification: ${found} caption tracks instead of ${captions.tracks.length}`,
    );
  const describe = (track: CaptionTrack): CaptionsReport['tracks'][number] => ({
    source: track.source,
    index: track.index,
    language: iso639Part2(track.language),
    label: track.label,
    ...(captions.tracks.includes(track) ? { codec } : {}),
  });
  return {
    tracks: captions.tracks.map(describe),
    ...(captions.burnIn ? { burnedIn: describe(captions.burnIn.track) } : {}),
  };
}

/**
 * The codec of the output's caption tracks, and how ffprobe names it (media-info.ts): mov_text in
 * MP4, WebVTT in WebM, and WebVTT in MP4 with VP8 video (the remux writes `wvtt` tracks).
 */
function captionCodec(spec: Pick<TranscodeSpec, 'encoder' | 'container'>): {
  codec: NonNullable<CaptionsReport['tracks'][number]['codec']>;
  probed: string;
} {
  if (needsRemux(spec)) return { codec: 'webvtt', probed: 'wvtt' };
  return spec.container === 'mp4'
    ? { codec: 'mov_text', probed: 'mov_text' }
    : { codec: 'webvtt', probed: 'webvtt' };
}
