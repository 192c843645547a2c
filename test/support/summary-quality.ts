import type { KnownStructure } from './generate-scenes.ts';

/** A stretch of a video, in seconds. */
export interface Span {
  startSeconds: number;
  endSeconds: number;
}

/** How well a set of clips shows a video of known structure. */
export interface Quality {
  /** Share of the scenes shown for at least half a second. */
  sceneCoverage: number;
  /** Share of the motion bursts shown for at least half their length. */
  burstsCaught: number;
  /** Clips that hold a cut (a flash of another scene). */
  clipsAcrossCuts: number;
}

const overlap = (a: Span, start: number, end: number): number =>
  Math.max(0, Math.min(a.endSeconds, end) - Math.max(a.startSeconds, start));

export function measureQuality(clips: readonly Span[], known: KnownStructure): Quality {
  const cuts = known.scenes.slice(1).map((s) => s.start);
  return {
    sceneCoverage:
      known.scenes.filter((s) => clips.some((c) => overlap(c, s.start, s.end) >= 0.5)).length /
      known.scenes.length,
    burstsCaught:
      known.bursts.filter((b) =>
        clips.some((c) => overlap(c, b.start, b.end) >= (b.end - b.start) / 2),
      ).length / Math.max(1, known.bursts.length),
    clipsAcrossCuts: clips.filter((c) =>
      cuts.some((cut) => cut > c.startSeconds + 1e-6 && cut < c.endSeconds - 1e-6),
    ).length,
  };
}

/** The baseline: `count` clips of equal length, `totalSeconds` in all, each centred in its share of the video. */
export function evenlySpaced(durationSeconds: number, count: number, totalSeconds: number): Span[] {
  const length = totalSeconds / count;
  const share = durationSeconds / count;
  return Array.from({ length: count }, (_, i) => ({
    startSeconds: i * share + (share - length) / 2,
    endSeconds: i * share + (share + length) / 2,
  }));
}
