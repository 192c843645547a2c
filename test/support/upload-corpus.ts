// Inputs shaped like real uploads (phones, screens, browsers, cameras, broadcast, saved streams,
// HDR, odd audio, many containers, broken files), made with ffmpeg's lavfi sources so that no
// binary is committed. Every picture shows a red box in its DISPLAYED top-left corner.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { markerTopLeft } from './media-checks.ts';

const run = promisify(execFile);
const FFMPEG = process.env['TEST_FFMPEG'] ?? 'ffmpeg';

export interface UploadCase {
  /** kebab-case, e.g. 'phone-portrait-90'. */
  name: string;
  /** File name in the corpus dir, with its real extension. */
  file: string;
  kind:
    | 'phone'
    | 'screen'
    | 'browser'
    | 'camera'
    | 'broadcast'
    | 'saved-stream'
    | 'hdr'
    | 'audio'
    | 'container'
    | 'broken';
  /** What a viewer of the input sees: the model the service must derive. */
  expect: {
    /** After rotation and sample aspect ratio. */
    displayWidth: number;
    displayHeight: number;
    /** Clockwise display rotation the file asks for. */
    rotation: 0 | 90 | 180 | 270;
    /** True content length. */
    durationSeconds: number;
    /** Of the first audio stream; 0 = no audio. */
    audioChannels: number;
    dynamicRange: 'sdr' | 'pq' | 'hlg';
    interlaced: boolean;
  };
  /** Frames come at a variable rate (phones in low light, screen recorders on a still). */
  variableFrameRate?: true;
  /**
   * The picture moves and is noisy enough that every encoder can spend the contract's least
   * rate (1000 kb/s) on it: a transcode must land within 5 % of the request.
   */
  fillsRequest?: true;
  /** The job must fail with this error code instead of succeeding. */
  refusedWith?: string;
  /** For HDR cases: path of an SDR reference clip of the same content. */
  sdrReference?: string;
}

type Expect = UploadCase['expect'];
type Make = (out: string, scratch: (suffix: string) => string) => Promise<void>;
interface Recipe extends Omit<UploadCase, 'sdrReference'> {
  make: Make;
  /** File name of the SDR reference the recipe also writes (HDR cases). */
  sdrFile?: string;
}

async function ff(...args: string[]): Promise<void> {
  await run(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', ...args], {
    maxBuffer: 16 * 1024 * 1024,
  });
}

/** ffmpeg writing to a pipe (non-seekable), stdout into `out`: what MediaRecorder produces. */
async function ffToPipe(out: string, args: string[]): Promise<void> {
  const file = await open(out, 'w');
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(FFMPEG, ['-hide_banner', '-loglevel', 'error', ...args, 'pipe:1'], {
        stdio: ['ignore', file.fd, 'pipe'],
      });
      let stderr = '';
      child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`ffmpeg exit ${code}: ${stderr}`)),
      );
    });
  } finally {
    await file.close();
  }
}

/**
 * The upright picture: testsrc2's motion with red mixed out of it (red = (green + blue) / 2,
 * so no part of it reads as red), scrolling so every edge moves, and a solid red box of a fifth
 * of each side in the top-left corner.
 */
function picture(w: number, h: number, o: { rate?: string | number; seconds?: number } = {}) {
  return (
    `testsrc2=s=${w}x${h}:r=${o.rate ?? 25}:d=${o.seconds ?? 2},` +
    'colorchannelmixer=rr=0:rg=0.5:rb=0.5,scroll=h=0.004,' +
    'drawbox=x=0:y=0:w=iw/5:h=ih/5:color=red:t=fill'
  );
}

const CHANNELS = { mono: 1, stereo: 2, quad: 4, '5.1(side)': 6, '7.1': 8 } as const;
type Layout = keyof typeof CHANNELS;

/** A tone per channel (distinct frequencies), `seconds` long. */
function tone(seconds: number, layout: Layout = 'stereo', rate = 48_000): string {
  const exprs = Array.from(
    { length: CHANNELS[layout] },
    (_, i) => `0.4*sin(${330 + 110 * i}*2*PI*t)`,
  );
  return `aevalsrc=${exprs.join('|')}:s=${rate}:d=${seconds}:c=${layout}`;
}

const lavfi = (...sources: string[]): string[] => sources.flatMap((s) => ['-f', 'lavfi', '-i', s]);
const H264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
const AAC = ['-c:a', 'aac', '-b:a', '96k'];

/** Turns the upright picture is stored with, so that a player applying `cw` shows it upright. */
const STORED_TURN = { 90: 'transpose=cclock', 180: 'hflip,vflip', 270: 'transpose=clock' };
/**
 * ffmpeg 5.1 writes the `rotate` tag's display matrix in the opposite sense to the tag:
 * `rotate=90` makes a matrix ffprobe prints as +90 (counterclockwise) and ffmpeg's autorotate
 * turns the picture 90° counterclockwise. The tag asking for `cw` clockwise is therefore
 * 360 - cw (checked on every generated file by decoding it, see `verifyMarker`).
 */
const ROTATE_TAG = { 90: '270', 180: '180', 270: '90' };

/** Encodes the upright picture turned by STORED_TURN[cw] (via `encode`), then tags the rotation. */
async function rotated(
  out: string,
  scratch: (suffix: string) => string,
  cw: 90 | 180 | 270,
  encode: (stored: string, turn: string) => Promise<void>,
): Promise<void> {
  const stored = scratch(out.slice(out.lastIndexOf('.')));
  await encode(stored, STORED_TURN[cw]);
  const tag = `rotate=${ROTATE_TAG[cw]}`;
  await ff('-i', stored, '-map', '0', '-c', 'copy', '-metadata:s:v:0', tag, out);
}

const sdr = (
  w: number,
  h: number,
  seconds: number,
  audioChannels: number,
  more: Partial<Expect> = {},
): Expect => ({
  displayWidth: w,
  displayHeight: h,
  rotation: 0,
  durationSeconds: seconds,
  audioChannels,
  dynamicRange: 'sdr',
  interlaced: false,
  ...more,
});

/** An H.264 + AAC file of the marked picture: the plain recipe most cases vary. */
function plain(o: {
  w?: number;
  h?: number;
  seconds?: number;
  rate?: number;
  layout?: Layout | 'none';
  sampleRate?: number;
  audio?: string[];
  extra?: string[];
}): Make {
  const seconds = o.seconds ?? 2;
  const layout = o.layout ?? 'stereo';
  return (out) =>
    ff(
      ...lavfi(picture(o.w ?? 640, o.h ?? 360, { seconds, rate: o.rate ?? 25 })),
      ...(layout === 'none' ? [] : lavfi(tone(seconds, layout, o.sampleRate))),
      ...H264,
      ...(layout === 'none' ? [] : (o.audio ?? AAC)),
      ...(o.extra ?? []),
      out,
    );
}

/** Frames 20–39 at half rate (a phone's low-light stretch): timestamps kept as they are. */
const HALF_RATE_STRETCH = 'select=lt(n\\,20)+gte(n\\,40)+between(n\\,20\\,39)*not(mod(n\\,2))';
/** No frame between `from` and `to` seconds: a screen recorder's still stretch. */
const still = (from: number, to: number): string => `select=not(between(t\\,${from}\\,${to}))`;
const PASSTHROUGH = ['-fps_mode', 'passthrough'];

/** A phone clip (AAC stereo), stored turned and tagged with `cw`; an iPhone's HEVC in MOV with `hevc`. */
function phone(
  name: string,
  cw: 0 | 90 | 180 | 270,
  o: { vfr?: boolean; hevc?: boolean } = {},
): Recipe {
  const portrait = cw === 90 || cw === 270;
  const [w, h] = portrait ? [360, 640] : [640, 360];
  const video = o.hevc
    ? [
        '-c:v',
        'libx265',
        '-preset',
        'ultrafast',
        '-x265-params',
        'log-level=error',
        '-tag:v',
        'hvc1',
      ]
    : H264;
  const encode = (out: string, turn: string): Promise<void> =>
    ff(
      ...lavfi(
        [picture(w, h, { rate: 30 }), ...(o.vfr ? [HALF_RATE_STRETCH] : []), turn].join(','),
        tone(2),
      ),
      ...video,
      ...AAC,
      ...(o.vfr ? PASSTHROUGH : []),
      out,
    );
  return {
    name,
    file: `${name}.${o.hevc ? 'mov' : 'mp4'}`,
    kind: 'phone',
    ...(o.vfr ? { variableFrameRate: true } : {}),
    expect: sdr(w, h, 2, 2, { rotation: cw }),
    make: (out, scratch) => (cw === 0 ? encode(out, 'null') : rotated(out, scratch, cw, encode)),
  };
}

/**
 * A phone's 60 fps mode as the light changes: nominal 60 fps (its time base), frames at 30 a
 * second with a stretch at 12 from 1.5 s to 3 s (23 a second on average), with temporal noise
 * so that the bits asked for can be spent.
 */
function phoneVfrBusy(name: string): Recipe {
  const slowStretch = 'select=if(between(t\\,1.5\\,3)\\,not(mod(n\\,5))\\,not(mod(n\\,2)))';
  return {
    name,
    file: `${name}.mp4`,
    kind: 'phone',
    variableFrameRate: true,
    fillsRequest: true,
    expect: sdr(640, 360, 4, 2),
    make: (out) =>
      ff(
        ...lavfi(
          `${picture(640, 360, { rate: 60, seconds: 4 })},noise=alls=16:allf=t,${slowStretch}`,
          tone(4),
        ),
        ...[...H264, '-crf', '14'],
        ...AAC,
        ...PASSTHROUGH,
        out,
      ),
  };
}

function screen(name: string, file: string, w: number, h: number, extra: string[]): Recipe {
  return {
    name,
    file,
    kind: 'screen',
    variableFrameRate: true,
    expect: sdr(w, h, 3, 0),
    make: (out) =>
      ff(
        ...lavfi(
          `${picture(w + (w % 2), h + (h % 2), { rate: 30, seconds: 3 })},scale=${w}:${h},setsar=1,${still(0.8, 2)}`,
        ),
        ...extra,
        ...PASSTHROUGH,
        out,
      ),
  };
}

/** MediaRecorder-like: written to a pipe, so no duration, no cues, unknown-size clusters. */
function browser(name: string, w: number, h: number, video: string[], layout?: Layout): Recipe {
  return {
    name,
    file: `${name}.webm`,
    kind: 'browser',
    expect: sdr(w, h, 2, layout ? CHANNELS[layout] : 0),
    make: (out) =>
      ffToPipe(out, [
        ...lavfi(picture(w, h, { rate: 30 }), ...(layout ? [tone(2, layout)] : [])),
        ...video,
        ...['-deadline', 'realtime', '-cpu-used', '8', '-b:v', '800k'],
        ...(layout ? ['-c:a', 'libopus', '-b:a', '64k'] : []),
        ...['-f', 'webm'],
      ]),
  };
}

/** A picture built upright at its displayed size, stored at 720 wide with a sample aspect. */
const anamorphic = (w: number, h: number, rate: number | string, sar: string): string =>
  `${picture(w, h, { rate })},scale=720:${h},setsar=${sar}`;
/** Fields of successive frames woven (the frame rate halves): real interlaced motion. */
const weave = (order: 'top' | 'bottom'): string =>
  `tinterlace=mode=interleave_${order},setfield=${order === 'top' ? 'tff' : 'bff'}`;

const hdrVideo = (transfer: string): string =>
  'zscale=tin=bt709:min=bt709:pin=bt709:rin=tv:t=linear,format=gbrpf32le,' +
  `zscale=p=bt2020:t=${transfer}:m=bt2020nc:r=tv:npl=203,format=yuv420p10le`;
/** The inverse of hdrVideo (no tone curve needed: the content never exceeds the SDR white). */
export const HDR_TO_SDR =
  'zscale=t=linear:npl=203,format=gbrpf32le,zscale=p=bt709:t=bt709:m=bt709:r=tv,format=yuv420p';
const colourTags = (primaries: string, transfer: string, matrix: string): string[] => [
  ...['-color_primaries', primaries, '-color_trc', transfer, '-colorspace', matrix],
];
const X265 = (transfer: string): string[] => [
  ...['-c:v', 'libx265', '-preset', 'ultrafast', '-tag:v', 'hvc1', '-x265-params'],
  transfer === 'smpte2084'
    ? 'log-level=error:repeat-headers=1:hdr10=1:max-cll=1000,400:' +
      'master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)'
    : 'log-level=error',
];

/**
 * HDR made from an SDR clip (kept as the reference): BT.709 → linear → BT.2020 with PQ or HLG,
 * the SDR white placed at 203 cd/m² (BT.2408's reference white).
 */
function hdr(
  name: string,
  file: string,
  o: { transfer: 'smpte2084' | 'arib-std-b67'; cw?: 90; encoder: string[] },
): Recipe {
  const [w, h] = o.cw ? [360, 640] : [640, 360];
  const sdrFile = `${name}.sdr-reference.mp4`;
  return {
    name,
    file,
    kind: 'hdr',
    sdrFile,
    expect: sdr(w, h, 2, 2, {
      rotation: o.cw ?? 0,
      dynamicRange: o.transfer === 'smpte2084' ? 'pq' : 'hlg',
    }),
    make: async (out, scratch) => {
      const reference = join(out, '..', sdrFile);
      await ff(
        ...lavfi(`${picture(w, h)},format=yuv420p`),
        ...H264,
        ...['-crf', '12', ...colourTags('bt709', 'bt709', 'bt709'), reference],
      );
      const encode = (stored: string, turn: string): Promise<void> =>
        ff(
          ...['-i', reference, ...lavfi(tone(2))],
          ...['-vf', `${turn},${hdrVideo(o.transfer)}`],
          ...o.encoder,
          ...colourTags('bt2020', o.transfer, 'bt2020nc'),
          ...(file.endsWith('.webm') ? ['-c:a', 'libopus'] : AAC),
          stored,
        );
      return o.cw ? rotated(out, scratch, o.cw, encode) : encode(out, 'null');
    },
  };
}

/** Two MPEG-TS segments encoded apart (each restarts its timestamps), joined byte-wise. */
function joinedSegments(secondOffset?: number): Make {
  return async (out, scratch) => {
    const parts = [scratch('-1.ts'), scratch('-2.ts')];
    for (const [i, part] of parts.entries())
      await ff(
        ...lavfi(picture(640, 360), tone(2)),
        ...H264,
        ...AAC,
        ...(i === 1 && secondOffset ? ['-output_ts_offset', String(secondOffset)] : []),
        part,
      );
    await writeFile(out, Buffer.concat(await Promise.all(parts.map((p) => readFile(p)))));
  };
}

/** A complete file made by `make`, cut to `fraction` of its bytes. */
function truncated(make: Make, suffix: string, fraction: number): Make {
  return async (out, scratch) => {
    const whole = scratch(suffix);
    await make(whole, scratch);
    const bytes = await readFile(whole);
    await writeFile(out, bytes.subarray(0, Math.floor(bytes.length * fraction)));
  };
}

const withFile = (r: Omit<Recipe, 'file'>, ext: string): Recipe => ({
  ...r,
  file: `${r.name}.${ext}`,
});

const RECIPES: Recipe[] = [
  phone('phone-portrait-90', 90),
  phone('phone-portrait-270', 270),
  phone('phone-upside-down-180', 180),
  phone('phone-landscape-hevc-0', 0, { hevc: true }),
  phone('phone-portrait-vfr-90', 90, { vfr: true }),
  phoneVfrBusy('phone-60fps-vfr-busy'),
  screen('screen-642x362-stills', 'screen-642x362-stills.mp4', 642, 362, [...H264]),
  screen('screen-683x384-yuv444', 'screen-683x384-yuv444.mkv', 683, 384, [
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv444p'],
  ]),
  browser('browser-vp8-opus', 640, 480, ['-c:v', 'libvpx'], 'stereo'),
  browser('browser-vp9-opus', 640, 360, ['-c:v', 'libvpx-vp9', '-row-mt', '1'], 'mono'),
  browser('browser-vp9-screen-share', 640, 400, ['-c:v', 'libvpx-vp9', '-row-mt', '1']),
  withFile(
    {
      name: 'camera-pal-4x3-anamorphic',
      kind: 'camera',
      expect: sdr(768, 576, 2, 2),
      make: (out) => ff(...lavfi(anamorphic(768, 576, 25, '16/15'), tone(2)), ...H264, ...AAC, out),
    },
    'mp4',
  ),
  withFile(
    {
      name: 'camera-pal-16x9-dvd',
      kind: 'camera',
      expect: sdr(1024, 576, 2, 2),
      make: (out) =>
        ff(
          ...lavfi(anamorphic(1024, 576, 25, '64/45'), tone(2)),
          ...['-c:v', 'mpeg2video', '-b:v', '3M', '-g', '12', '-c:a', 'ac3', '-b:a', '192k'],
          ...['-f', 'dvd', out],
        ),
    },
    'vob',
  ),
  withFile(
    {
      name: 'camera-ntsc-dv-bff',
      kind: 'camera',
      expect: sdr(640, 480, 2.002, 2, { interlaced: true }),
      make: (out) =>
        ff(
          ...lavfi(`${anamorphic(640, 480, '60000/1001', '8/9')},${weave('bottom')}`, tone(2.002)),
          ...['-c:v', 'dvvideo', '-pix_fmt', 'yuv411p', '-field_order', 'bb'],
          ...['-c:a', 'pcm_s16le', out],
        ),
    },
    'mov',
  ),
  withFile(
    {
      name: 'camera-prores-422-10bit',
      kind: 'camera',
      expect: sdr(640, 360, 2, 2),
      make: plain({
        extra: ['-c:v', 'prores_ks', '-profile:v', '3', '-pix_fmt', 'yuv422p10le'],
        audio: ['-c:a', 'pcm_s24le'],
      }),
    },
    'mov',
  ),
  withFile(
    {
      name: 'camera-full-range-h264',
      kind: 'camera',
      expect: sdr(640, 480, 2, 1),
      make: plain({ w: 640, h: 480, rate: 30, layout: 'mono', extra: ['-pix_fmt', 'yuvj420p'] }),
    },
    'mp4',
  ),
  withFile(
    {
      name: 'camera-mjpeg-pcm',
      kind: 'camera',
      expect: sdr(640, 480, 2, 1),
      make: plain({
        w: 640,
        h: 480,
        rate: 30,
        layout: 'mono',
        sampleRate: 16_000,
        extra: ['-c:v', 'mjpeg', '-q:v', '4', '-pix_fmt', 'yuvj422p'],
        audio: ['-c:a', 'pcm_s16le'],
      }),
    },
    'avi',
  ),
  withFile(
    {
      name: 'broadcast-h264-tff',
      kind: 'broadcast',
      expect: sdr(768, 576, 2, 2, { interlaced: true }),
      make: (out) =>
        ff(
          ...lavfi(`${anamorphic(768, 576, 50, '16/15')},${weave('top')}`, tone(2)),
          ...H264,
          ...['-flags', '+ildct+ilme', '-x264opts', 'tff=1', '-c:a', 'mp2', '-b:a', '192k', out],
        ),
    },
    'ts',
  ),
  withFile(
    {
      name: 'broadcast-mpeg2-ac3-51side',
      kind: 'broadcast',
      expect: sdr(1024, 576, 2, 6, { interlaced: true }),
      make: (out) =>
        ff(
          ...lavfi(`${anamorphic(1024, 576, 50, '64/45')},${weave('top')}`, tone(2, '5.1(side)')),
          ...['-c:v', 'mpeg2video', '-b:v', '4M', '-flags', '+ildct+ilme', '-top', '1'],
          ...['-field_order', 'tt', '-c:a', 'ac3', '-b:a', '384k', out],
        ),
    },
    'ts',
  ),
  withFile(
    {
      // MPEG-4 Part 2 in AVI carries no field order (ffprobe prints none): only idet finds it.
      name: 'broadcast-unflagged-xvid',
      kind: 'broadcast',
      expect: sdr(640, 480, 2.002, 2, { interlaced: true }),
      make: (out) =>
        ff(
          ...lavfi(
            `${picture(640, 480, { rate: '60000/1001' })},${weave('top')}`,
            tone(2.002, 'stereo', 44_100),
          ),
          ...[
            '-c:v',
            'mpeg4',
            '-q:v',
            '3',
            '-vtag',
            'XVID',
            '-c:a',
            'libmp3lame',
            '-b:a',
            '128k',
            out,
          ],
        ),
    },
    'avi',
  ),
  withFile(
    {
      name: 'saved-stream-cat-ts',
      kind: 'saved-stream',
      expect: sdr(640, 360, 4, 2),
      make: joinedSegments(),
    },
    'ts',
  ),
  withFile(
    {
      name: 'saved-stream-10h-start',
      kind: 'saved-stream',
      expect: sdr(640, 360, 2, 2),
      make: plain({ extra: ['-output_ts_offset', '36000'] }),
    },
    'ts',
  ),
  withFile(
    {
      name: 'saved-stream-ts-jump',
      kind: 'saved-stream',
      expect: sdr(640, 360, 4, 2),
      make: joinedSegments(30),
    },
    'ts',
  ),
  hdr('hdr10-pq-hevc', 'hdr10-pq-hevc.mp4', { transfer: 'smpte2084', encoder: X265('smpte2084') }),
  hdr('hlg-hevc-portrait-90', 'hlg-hevc-portrait-90.mov', {
    transfer: 'arib-std-b67',
    cw: 90,
    encoder: X265('arib-std-b67'),
  }),
  hdr('hdr10-pq-vp9', 'hdr10-pq-vp9.webm', {
    transfer: 'smpte2084',
    encoder: [
      ...['-c:v', 'libvpx-vp9', '-profile:v', '2', '-pix_fmt', 'yuv420p10le', '-row-mt', '1'],
      ...['-deadline', 'realtime', '-cpu-used', '8', '-b:v', '1M'],
    ],
  }),
  audio('audio-ac3-51side', 'mkv', 6, {
    layout: '5.1(side)',
    audio: ['-c:a', 'ac3', '-b:a', '384k'],
  }),
  audio('audio-71-pcm', 'mov', 8, { layout: '7.1', audio: ['-c:a', 'pcm_s16le'] }),
  audio('audio-mono-22k', 'mp4', 1, { layout: 'mono', sampleRate: 22_050 }),
  audio('audio-quad-flac', 'mkv', 4, { layout: 'quad', audio: ['-c:a', 'flac'] }),
  audio('audio-96k-stereo', 'mov', 2, { sampleRate: 96_000, audio: ['-c:a', 'pcm_s24le'] }),
  audio('audio-none', 'mp4', 0, { layout: 'none' }),
  withFile(
    {
      name: 'audio-two-tracks',
      kind: 'audio',
      expect: sdr(640, 360, 2, 2),
      make: (out) =>
        ff(
          ...lavfi(picture(640, 360), tone(2), tone(2, 'mono')),
          ...['-map', '0', '-map', '1', '-map', '2'],
          ...H264,
          ...AAC,
          out,
        ),
    },
    'mkv',
  ),
  withFile(
    {
      name: 'audio-late-1s',
      kind: 'audio',
      expect: sdr(640, 360, 3, 2),
      make: (out) =>
        ff(
          ...lavfi(picture(640, 360, { seconds: 3 })),
          '-itsoffset',
          '1',
          ...lavfi(tone(2)),
          ...H264,
          ...AAC,
          out,
        ),
    },
    'mp4',
  ),
  withFile(
    {
      name: 'container-mkv-srt',
      kind: 'container',
      expect: sdr(640, 360, 2, 2),
      make: async (out, scratch) => {
        const srt = scratch('.srt');
        await writeFile(srt, '1\n00:00:00,000 --> 00:00:01,500\nHello, upload\n\n');
        await ff(
          ...lavfi(picture(640, 360), tone(2)),
          '-i',
          srt,
          ...['-map', '0', '-map', '1', '-map', '2'],
          ...H264,
          ...AAC,
          '-c:s',
          'srt',
          out,
        );
      },
    },
    'mkv',
  ),
  withFile(
    {
      name: 'container-mp4-cover-art',
      kind: 'container',
      expect: sdr(640, 360, 2, 2),
      make: (out) =>
        ff(
          ...lavfi(picture(640, 360), tone(2), 'color=c=blue:s=300x300:d=0.04'),
          ...['-map', '0:v', '-map', '1:a', '-map', '2:v', ...H264, ...AAC],
          ...[
            '-c:v:1',
            'png',
            '-pix_fmt:v:1',
            'rgb24',
            '-frames:v:1',
            '1',
            '-disposition:v:1',
            'attached_pic',
            out,
          ],
        ),
    },
    'mp4',
  ),
  withFile(
    {
      name: 'container-mp4-moov-at-end',
      kind: 'container',
      expect: sdr(640, 360, 3, 2),
      make: plain({ seconds: 3 }),
    },
    'mp4',
  ),
  withFile(
    {
      name: 'container-fragmented-mp4',
      kind: 'container',
      expect: sdr(640, 360, 2, 2),
      make: plain({ extra: ['-movflags', 'frag_keyframe+empty_moov+default_base_moof'] }),
    },
    'mp4',
  ),
  withFile(
    {
      name: 'container-avi-xvid-mp3',
      kind: 'container',
      expect: sdr(640, 360, 2, 2),
      make: plain({
        sampleRate: 44_100,
        extra: ['-c:v', 'mpeg4', '-q:v', '4', '-vtag', 'XVID'],
        audio: ['-c:a', 'libmp3lame', '-b:a', '128k'],
      }),
    },
    'avi',
  ),
  withFile(
    {
      name: 'container-flv',
      kind: 'container',
      expect: sdr(640, 360, 2, 2),
      make: plain({
        sampleRate: 44_100,
        extra: ['-c:v', 'flv', '-q:v', '4'],
        audio: ['-c:a', 'libmp3lame'],
      }),
    },
    'flv',
  ),
  withFile(
    {
      name: 'container-wmv',
      kind: 'container',
      expect: sdr(640, 360, 2, 2),
      make: plain({
        extra: ['-c:v', 'wmv2', '-b:v', '1500k'],
        audio: ['-c:a', 'wmav2', '-b:a', '128k'],
      }),
    },
    'wmv',
  ),
  withFile(
    {
      name: 'container-ogg-theora',
      kind: 'container',
      expect: sdr(640, 360, 2, 2),
      make: plain({ extra: ['-c:v', 'libtheora', '-q:v', '6'], audio: ['-c:a', 'libvorbis'] }),
    },
    'ogv',
  ),
  withFile(
    {
      name: 'container-av1-webm',
      kind: 'container',
      expect: sdr(480, 270, 2, 2),
      make: plain({
        w: 480,
        h: 270,
        extra: ['-c:v', 'libaom-av1', '-usage', 'realtime', '-cpu-used', '8', '-b:v', '400k'],
        audio: ['-c:a', 'libopus'],
      }),
    },
    'webm',
  ),
  withFile(
    {
      name: 'container-short-0.4s',
      kind: 'container',
      expect: sdr(640, 360, 0.4, 2),
      make: plain({ seconds: 0.4 }),
    },
    'mp4',
  ),
  withFile(
    {
      name: 'container-odd-321x241',
      kind: 'container',
      expect: sdr(321, 241, 2, 2),
      make: (out) =>
        ff(
          ...lavfi(`${picture(322, 242)},scale=321:241,setsar=1`, tone(2)),
          ...['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '500k'],
          ...['-c:a', 'libopus', out],
        ),
    },
    'webm',
  ),
  withFile(
    {
      name: 'broken-mp4-truncated',
      kind: 'broken',
      expect: sdr(640, 360, 3, 2),
      refusedWith: 'input_corrupt',
      make: truncated(plain({ seconds: 3, extra: ['-movflags', '+faststart'] }), '.mp4', 0.6),
    },
    'mp4',
  ),
  withFile(
    {
      name: 'broken-mkv-truncated',
      kind: 'broken',
      expect: sdr(640, 360, 3, 2),
      refusedWith: 'input_corrupt',
      make: truncated(plain({ seconds: 3 }), '.mkv', 0.6),
    },
    'mkv',
  ),
  withFile(
    {
      name: 'broken-audio-only',
      kind: 'broken',
      expect: { ...sdr(0, 0, 2, 2) },
      refusedWith: 'input_unsupported',
      make: (out) => ff(...lavfi(tone(2)), ...AAC, out),
    },
    'm4a',
  ),
];

function audio(
  name: string,
  ext: string,
  channels: number,
  o: { layout?: Layout | 'none'; sampleRate?: number; audio?: string[] },
): Recipe {
  return withFile({ name, kind: 'audio', expect: sdr(640, 360, 2, channels), make: plain(o) }, ext);
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/**
 * Writes the corpus (or the cases named in `only`) into `dir`, skipping files already there,
 * and checks each picture's marker is top-left when plain ffmpeg decodes it (autorotated).
 */
export async function generateUploadCorpus(
  dir: string,
  only?: readonly string[],
): Promise<UploadCase[]> {
  const queue = RECIPES.filter((r) => !only || only.includes(r.name));
  const worker = async (): Promise<void> => {
    for (let r = queue.shift(); r; r = queue.shift()) await generateOne(dir, r);
  };
  await Promise.all([worker(), worker()]);
  return uploadCases(dir, only);
}

/**
 * The corpus (or the cases named in `only`) generated once per version of this generator, in a
 * temp directory named after its source, kept between runs; and that directory.
 */
export async function cachedUploadCorpus(
  only?: readonly string[],
): Promise<{ dir: string; cases: UploadCase[] }> {
  const source = await readFile(new URL(import.meta.url));
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), `upload-corpus-${hash}`);
  await mkdir(dir, { recursive: true });
  return { dir, cases: await generateUploadCorpus(dir, only) };
}

/** The cases (of `only`, if given) as they are once generated in `dir`, without generating. */
export function uploadCases(dir: string, only?: readonly string[]): UploadCase[] {
  return RECIPES.filter((r) => !only || only.includes(r.name)).map(
    ({ make: _make, sdrFile, ...c }) => (sdrFile ? { ...c, sdrReference: join(dir, sdrFile) } : c),
  );
}

async function generateOne(dir: string, r: Recipe): Promise<void> {
  const out = join(dir, r.file);
  if ((await exists(out)) && (!r.sdrFile || (await exists(join(dir, r.sdrFile))))) return;
  const scratchFiles: string[] = [];
  const scratch = (suffix: string): string => {
    const path = join(dir, `.scratch-${r.name}-${scratchFiles.length}${suffix}`);
    scratchFiles.push(path);
    return path;
  };
  const partial = join(dir, `.part-${r.file}`);
  try {
    await r.make(partial, scratch);
    if (r.kind !== 'broken') await verifyMarker(partial, r);
    await rename(partial, out);
  } finally {
    await Promise.all([partial, ...scratchFiles].map((p) => rm(p, { force: true })));
  }
}

async function verifyMarker(path: string, r: Recipe): Promise<void> {
  const { ok, corners } = await markerTopLeft(path, r.kind === 'hdr' ? HDR_TO_SDR : undefined);
  if (!ok)
    throw new Error(
      `${r.name}: the red marker is not top-left once decoded: ${JSON.stringify(corners)}`,
    );
}
