// What the caption playback tests share: WebVTT written from cues, and what hls.js and dash.js
// (page-captions.js) showed of a stream's caption tracks.
import { expect } from 'chai';
import type { Page } from 'puppeteer-core';

/** A cue: start and end, seconds, and its text. */
export type Cue = readonly [number, number, string];

const vttTime = (s: number): string => `00:00:${s.toFixed(3).padStart(6, '0')}`;
/** One cue as a WebVTT file. */
export const vtt = ([start, end, text]: Cue): string =>
  `WEBVTT\n\n${vttTime(start)} --> ${vttTime(end)}\n${text}\n`;

export interface Shown {
  label: string;
  language: string;
  at: number;
  texts: string[];
}
export interface Captions {
  tracks: Record<string, unknown>[];
  element: { kind: string; label: string; language: string }[];
  shown: Shown[];
  errors: string[];
}

/** A track as the player should show it: its language and a cue on the stream's timeline. */
export interface ExpectedTrack {
  language: string;
  label: string;
  cue: Cue;
}

/**
 * What a player showed, half a second into each track's cue: the cue's text alone, in the track of
 * its language.
 */
export function expectCuesShown(shown: Shown[], tracks: readonly ExpectedTrack[]): void {
  expect(shown.map((s) => [s.language, s.texts])).to.deep.equal(
    tracks.map((t) => [t.language, [t.cue[2]]]),
  );
  shown.forEach((s, k) => expect(s.at).to.be.closeTo((tracks[k]?.cue[0] ?? -1) + 0.5, 0.3));
}

/** `play` is hlsCaptions or dashCaptions of page-captions.js; each track looked at in its cue. */
export async function captionsIn(
  page: Page,
  play: 'hlsCaptions' | 'dashCaptions',
  url: string,
  tracks: readonly ExpectedTrack[],
): Promise<Captions> {
  const times = tracks.map((t) => t.cue[0] + 0.5);
  return (await page.evaluate(
    (fn, u, at) =>
      (globalThis as unknown as Record<string, (u: string, at: number[]) => Promise<unknown>>)[
        fn
      ]?.(u, at),
    play,
    url,
    times,
  )) as Captions;
}

/** hls.js: the SUBTITLES group's tracks, the element's, and each cue shown at its time. */
export function expectHlsCaptions(got: Captions, tracks: readonly ExpectedTrack[]): void {
  expect(got.errors).to.deep.equal([]);
  expect(got.tracks).to.deep.equal(
    tracks.map((t) => ({ name: t.label, lang: t.language, default: false })),
  );
  expect(got.element.map((e) => [e.kind, e.label, e.language])).to.deep.equal(
    tracks.map((t) => ['subtitles', t.label, t.language]),
  );
  expectCuesShown(got.shown, tracks);
  expect(got.shown.map((s) => s.label)).to.deep.equal(tracks.map((t) => t.label));
}

/** dash.js: the text adaptation sets (language, label, role) and each cue shown at its time. */
export function expectDashCaptions(got: Captions, tracks: readonly ExpectedTrack[]): void {
  expect(got.errors).to.deep.equal([]);
  expect(got.tracks).to.deep.equal(
    tracks.map((t) => ({ lang: t.language, labels: [t.label], roles: ['subtitle'] })),
  );
  // dash.js labels the element's tracks by adaptation set id; its own list has the labels.
  expect(got.element.map((e) => e.language)).to.deep.equal(tracks.map((t) => t.language));
  expectCuesShown(got.shown, tracks);
}
