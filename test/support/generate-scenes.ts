import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One scene of a generated video: a lavfi source (with its colouring), optionally a burst of motion. */
export interface SceneSpec {
  /** A lavfi source and filters, without size or duration (added here), e.g. `testsrc2,hue=h=120`. */
  source: string;
  seconds: number;
  /** A moving box over the scene from `at` for `seconds` (scene-relative), for still scenes. */
  burst?: { at: number; seconds: number };
}

/** Where a generated video's scenes and bursts are, in seconds from its start. */
export interface KnownStructure {
  durationSeconds: number;
  scenes: { start: number; end: number }[];
  bursts: { start: number; end: number }[];
}

/**
 * Scenes of different sources and colourings joined with hard cuts, still scenes with a short
 * burst of motion inside, 25 fps, a tone of a different pitch per scene when `audio` is set.
 */
export async function generateScenes(
  path: string,
  scenes: readonly SceneSpec[],
  o: { width: number; height: number; audio?: boolean; preset?: string; threads?: number },
): Promise<KnownStructure> {
  const inputs = scenes.flatMap((scene, i) => ['-f', 'lavfi', '-i', sceneGraph(scene, o, i)]);
  const audioInputs = o.audio
    ? scenes.flatMap((scene, i) => [
        '-f',
        'lavfi',
        '-i',
        `sine=frequency=${220 + 110 * i}:duration=${scene.seconds}`,
      ])
    : [];
  const n = scenes.length;
  const pads = scenes.map((_, i) => `[${i}:v]${o.audio ? `[${n + i}:a]` : ''}`).join('');
  const graph = `${pads}concat=n=${n}:v=1:a=${o.audio ? 1 : 0}[v]${o.audio ? '[a]' : ''}`;
  const args = [
    '-hide_banner',
    '-loglevel',
    'error',
    ...inputs,
    ...audioInputs,
    '-filter_complex',
    graph,
    '-map',
    '[v]',
    ...(o.audio ? ['-map', '[a]', '-c:a', 'aac'] : []),
  ];
  args.push(
    '-c:v',
    'libx264',
    '-preset',
    o.preset ?? 'ultrafast',
    '-pix_fmt',
    'yuv420p',
    '-threads',
    String(o.threads ?? 1),
    '-f',
    'mp4',
    '-y',
    path,
  );
  await run(process.env['TEST_FFMPEG'] ?? 'ffmpeg', args);
  return knownStructure(scenes);
}

function sceneGraph(
  scene: SceneSpec,
  frame: { width: number; height: number },
  index: number,
): string {
  const size = `${frame.width}x${frame.height}`;
  const [name, ...filters] = scene.source.split(',');
  // Not every source takes a duration (mandelbrot, life): trim ends them all alike.
  // Random sources get a fixed seed, so a video of one structure is the same on every run.
  const seed = ['life', 'cellauto', 'sierpinski'].includes(name ?? '') ? ':seed=1' : '';
  const base = `${name}${name?.includes('=') ? ':' : '='}size=${size}:rate=25${seed},trim=duration=${scene.seconds}`;
  const colour = [...filters, 'format=yuv420p', 'setsar=1'].join(',');
  if (!scene.burst) return `${base},${colour}`;
  const { at, seconds } = scene.burst;
  // The box crosses the frame left to right during the burst and is absent otherwise.
  // A tenth of the frame's area, whatever its size.
  const box = `testsrc2=size=${2 * Math.round(frame.width * 0.15)}x${2 * Math.round(frame.height * 0.2)}:rate=25:duration=${scene.seconds},hue=h=${40 * index}`;
  return `${base},${colour}[bg];${box}[box];[bg][box]overlay=x='(t-${at})*W/${seconds}-w/2':y=(H-h)/2:enable='between(t,${at},${at + seconds})'`;
}

export function knownStructure(scenes: readonly SceneSpec[]): KnownStructure {
  let start = 0;
  const out: KnownStructure = { durationSeconds: 0, scenes: [], bursts: [] };
  for (const scene of scenes) {
    out.scenes.push({ start, end: start + scene.seconds });
    if (scene.burst)
      out.bursts.push({
        start: start + scene.burst.at,
        end: start + scene.burst.at + scene.burst.seconds,
      });
    start += scene.seconds;
  }
  out.durationSeconds = start;
  return out;
}

/** Scenes of uneven length: short ones between long ones, four still scenes each with one burst. */
export const UNEVEN_SCENES: readonly SceneSpec[] = [
  { source: 'testsrc2', seconds: 6 },
  { source: 'smptebars', seconds: 10, burst: { at: 4, seconds: 1.5 } },
  { source: 'mandelbrot', seconds: 2 },
  { source: 'color=c=navy', seconds: 8, burst: { at: 5, seconds: 1.5 } },
  { source: 'life', seconds: 2 },
  { source: 'testsrc2,hue=h=120', seconds: 14 },
  { source: 'rgbtestsrc', seconds: 2 },
  { source: 'cellauto', seconds: 4 },
  { source: 'gradients', seconds: 6 },
  { source: 'smptehdbars,negate', seconds: 2 },
  { source: 'testsrc,hue=h=200', seconds: 9 },
  { source: 'colorspectrum,hue=h=60', seconds: 12, burst: { at: 8, seconds: 1.5 } },
  { source: 'sierpinski', seconds: 3 },
  { source: 'pal75bars,hue=s=0', seconds: 5, burst: { at: 1.5, seconds: 1.5 } },
];

/** Another structure for the same checks: a long opening, short scenes clustered, bursts early and late. */
export const CLUSTERED_SCENES: readonly SceneSpec[] = [
  { source: 'gradients', seconds: 20 },
  { source: 'smptebars', seconds: 2 },
  { source: 'testsrc2,hue=h=240', seconds: 3 },
  { source: 'color=c=darkgreen', seconds: 12, burst: { at: 9, seconds: 1.5 } },
  { source: 'mandelbrot', seconds: 5 },
  { source: 'rgbtestsrc,negate', seconds: 2 },
  { source: 'life', seconds: 7 },
  { source: 'pal100bars', seconds: 15, burst: { at: 3, seconds: 1.5 } },
  { source: 'cellauto', seconds: 2.5 },
  { source: 'testsrc,hue=s=0', seconds: 4 },
  { source: 'yuvtestsrc', seconds: 2 },
  { source: 'color=c=orange', seconds: 9, burst: { at: 6.5, seconds: 1.5 } },
];
