import { tmpdir } from 'node:os';
import type { AudioInfo, MediaInfo, VideoInfo } from '../../services/core/media/media-info.ts';
import { readInput, type JobInput } from '../../services/core/media/read-input.ts';
import { testMediaJobDeps } from './media-job-deps.ts';

/** A progressive 8-bit SDR video stream of this size (index 0), for tests of pure argument builders. */
export function videoInfo(
  size: { width: number; height: number },
  more: Partial<VideoInfo> = {},
): VideoInfo {
  return {
    index: 0,
    codec: 'h264',
    codecTag: 'avc1',
    width: size.width,
    height: size.height,
    display: { width: size.width, height: size.height },
    rotation: 0,
    sampleAspectRatio: 1,
    frameRate: 25,
    variableFrameRate: false,
    fieldOrder: 'progressive',
    bitDepth: 8,
    colour: {},
    dynamicRange: 'sdr',
    ...more,
  };
}

/** A stereo 48 kHz audio stream (index 1). */
export function audioInfo(more: Partial<AudioInfo> = {}): AudioInfo {
  return { index: 1, codec: 'aac', channels: 2, layout: 'stereo', sampleRate: 48000, ...more };
}

/** A media model of an MP4 with this video (and audio, unless `audio: false`). */
export function mediaInfo(
  size: { width: number; height: number },
  o: { audio?: boolean; durationSeconds?: number } = {},
): MediaInfo & { video: VideoInfo } {
  const audio = o.audio === false ? undefined : audioInfo();
  return {
    formatName: 'mov,mp4,m4a,3gp,3g2,mj2',
    durationSeconds: o.durationSeconds ?? 10,
    durationSource: 'container',
    startSeconds: 0,
    sizeBytes: 1000,
    video: videoInfo(size),
    ...(audio ? { audio } : {}),
    audioStreams: audio ? [audio] : [],
  };
}

/** A job input at `path` made from a model (no file is read). */
export function jobInputOf(path: string, info: MediaInfo & { video: VideoInfo }): JobInput {
  return { path, info, video: info.video };
}

/** A real file read as a job reads it (probe, remux when needed, interlace check). */
export function readTestInput(path: string, workDir = tmpdir()): Promise<JobInput> {
  const deps = testMediaJobDeps();
  return readInput(deps, new AbortController().signal, { inputPath: path, workDir });
}
