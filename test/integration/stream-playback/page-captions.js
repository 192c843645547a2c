// Runs in headless Chromium beside page.js: what hls.js and dash.js make of a stream's caption
// renditions. Each player lists its tracks; then each track in turn is shown (mode "showing"),
// the video seeked to a time asked, and the text of the cues active there read back.
/* global Hls, dashjs */

const waitFor = async (what, check, timeoutMs = 20000) => {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

function captionVideo() {
  const video = document.createElement('video');
  video.muted = true;
  video.playsInline = true;
  video.crossOrigin = 'anonymous';
  document.body.append(video);
  return video;
}

/** The text tracks of the element, as a player made them. */
const elementTracks = (video) =>
  [...video.textTracks].map((t) => ({ kind: t.kind, label: t.label, language: t.language }));

/**
 * Once the showing track has its cues, seeks to `at` and gives the text of its cues active there
 * (a seek made before the cues arrived left activeCues empty while paused).
 */
async function cuesAt(video, at) {
  let showing;
  await waitFor('a showing track with cues', () => {
    showing = [...video.textTracks].find((t) => t.mode === 'showing');
    return (showing?.cues?.length ?? 0) > 0;
  });
  video.currentTime = at;
  await waitFor(`the seek to ${at}`, () => !video.seeking && video.readyState >= 2);
  await waitFor(`a cue active at ${at}`, () => (showing.activeCues?.length ?? 0) > 0);
  return {
    label: showing.label,
    language: showing.language,
    at: video.currentTime,
    texts: [...showing.activeCues].map((c) => c.text),
  };
}

/** `times[i]`: where track i's cue is looked for. */
window.hlsCaptions = async (url, times) => {
  const video = captionVideo();
  const hls = new Hls({ capLevelToPlayerSize: false });
  const errors = [];
  hls.on(Hls.Events.ERROR, (_e, d) => d.fatal && errors.push(`${d.type}:${d.details}`));
  const parsed = new Promise((resolve) => hls.on(Hls.Events.MANIFEST_PARSED, resolve));
  hls.loadSource(url);
  hls.attachMedia(video);
  await parsed;
  const tracks = hls.subtitleTracks.map((t) => ({
    name: t.name,
    lang: t.lang,
    default: t.default,
  }));
  const shown = [];
  for (let i = 0; i < times.length; i++) {
    hls.subtitleDisplay = true;
    hls.subtitleTrack = i;
    shown.push(await cuesAt(video, times[i]));
  }
  const element = elementTracks(video);
  hls.destroy();
  video.remove();
  return { tracks, element, shown, errors };
};

/**
 * A dash.js player on `url`, paused, its text on, the track of `lang` chosen before it loads (a
 * viewer's language is set so): dash.js (5.2) adds the cues of a side-loaded file only to the
 * track current when the file arrives, and keeps the file it loaded first, so a track chosen
 * later with setTextTrack stayed without cues here.
 */
async function dashPlayer(url, lang) {
  const video = captionVideo();
  const player = dashjs.MediaPlayer().create();
  const errors = [];
  player.on(dashjs.MediaPlayer.events.ERROR, (e) => errors.push(JSON.stringify(e.error ?? e)));
  player.updateSettings({
    debug: { logLevel: dashjs.Debug.LOG_LEVEL_NONE },
    streaming: { text: { defaultEnabled: true } },
  });
  const initialized = new Promise((resolve) =>
    player.on(dashjs.MediaPlayer.events.STREAM_INITIALIZED, resolve),
  );
  player.initialize(video, undefined, false);
  if (lang) player.setInitialMediaSettingsFor('text', { lang });
  player.attachSource(url);
  await initialized;
  const done = () => {
    player.destroy();
    video.remove();
    return errors;
  };
  return { video, player, done };
}

/** `times[i]`: where track i's cue is looked for, each track in a player of its own. */
window.dashCaptions = async (url, times) => {
  const listing = await dashPlayer(url);
  const tracks = listing.player.getTracksFor('text').map((t) => ({
    lang: t.lang,
    labels: t.labels.map((l) => l.text),
    roles: (t.roles ?? []).map((r) => r.value),
  }));
  const element = elementTracks(listing.video);
  const errors = listing.done();
  const shown = [];
  for (let i = 0; i < times.length; i++) {
    const one = await dashPlayer(url, tracks[i]?.lang);
    shown.push(await cuesAt(one.video, times[i]));
    errors.push(...one.done());
  }
  return { tracks, element, shown, errors };
};
