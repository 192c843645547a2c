import { execFile, type ExecFileException } from 'node:child_process';
import { MediaError } from '../errors.ts';
import {
  boundedCommand,
  looksOutOfMemory,
  stoppedFromOutside,
  type CommandBounds,
} from './bounded-command.ts';
import { INPUT_FORMATS, PROTOCOLS } from './run-ffmpeg.ts';

export interface MediaInfo {
  /** ffprobe's format_name, e.g. "mov,mp4,m4a,3gp,3g2,mj2" or "matroska,webm". */
  formatName: string;
  durationSeconds: number;
  sizeBytes: number;
  video?: {
    codec: string;
    codecTag: string;
    width: number;
    height: number;
    frames?: number;
    pixFmt?: string;
  };
  audio?: { codec: string };
  /** Bits per second of the whole file. */
  bitRate?: number;
}

export type Prober = (path: string, options?: { countPackets?: boolean }) => Promise<MediaInfo>;

interface ProbeJson {
  format?: { format_name?: string; duration?: string; size?: string; bit_rate?: string };
  streams?: {
    codec_type?: string;
    codec_name?: string;
    codec_tag_string?: string;
    width?: number;
    height?: number;
    nb_frames?: string;
    nb_read_packets?: string;
    pix_fmt?: string;
  }[];
}

/** ffprobe with the same demuxer and protocol allow-lists and the same bounds as ffmpeg. */
export function createProber(ffprobePath: string, bounds: CommandBounds): Prober {
  return (path, options = {}) =>
    new Promise((resolve, reject) => {
      const args = [
        '-v',
        'error',
        '-format_whitelist',
        INPUT_FORMATS,
        '-protocol_whitelist',
        PROTOCOLS,
        '-print_format',
        'json',
        '-show_format',
        '-show_streams',
      ];
      if (options.countPackets) args.push('-count_packets');
      const [command, commandArgs] = boundedCommand(ffprobePath, [...args, path], bounds);
      execFile(
        command,
        commandArgs,
        { maxBuffer: 4 * 1024 * 1024, timeout: 60_000 },
        (error, stdout, stderr) => {
          // ffprobe's stderr names the local path; it goes to the log through the cause only.
          if (error) return reject(probeFailure(error, stderr, bounds));
          let json: ProbeJson;
          try {
            json = JSON.parse(stdout) as ProbeJson;
          } catch (cause) {
            return reject(
              new MediaError('input_unsupported', 'the input is not a readable video', { cause }),
            );
          }
          const video = json.streams?.find((s) => s.codec_type === 'video');
          const audio = json.streams?.find((s) => s.codec_type === 'audio');
          const frames = Number(video?.nb_read_packets ?? video?.nb_frames ?? NaN);
          resolve({
            formatName: json.format?.format_name ?? '',
            durationSeconds: Number(json.format?.duration ?? 0) || 0,
            sizeBytes: Number(json.format?.size ?? 0) || 0,
            ...(json.format?.bit_rate ? { bitRate: Number(json.format.bit_rate) } : {}),
            ...(video
              ? {
                  video: {
                    codec: video.codec_name ?? '',
                    codecTag: video.codec_tag_string ?? '',
                    width: video.width ?? 0,
                    height: video.height ?? 0,
                    ...(Number.isFinite(frames) ? { frames } : {}),
                    ...(video.pix_fmt ? { pixFmt: video.pix_fmt } : {}),
                  },
                }
              : {}),
            ...(audio ? { audio: { codec: audio.codec_name ?? '' } } : {}),
          });
        },
      );
    });
}

function probeFailure(error: ExecFileException, stderr: string, bounds: CommandBounds): MediaError {
  // `killed`: execFile's own time-out stopped it, a signal the service sent.
  const stopped = error.killed ? undefined : stoppedFromOutside('ffprobe', null, error.signal);
  if (stopped) return stopped;
  const cause = new Error(`ffprobe failed: ${stderr.trim() || error.message}`, { cause: error });
  if (looksOutOfMemory(stderr))
    return new MediaError(
      'memory_limit_exceeded',
      `reading the input needed more memory than the limit of ${bounds.memoryLimitBytes} bytes`,
      { cause },
    );
  return new MediaError('input_unsupported', 'the input is not a readable video', { cause });
}
