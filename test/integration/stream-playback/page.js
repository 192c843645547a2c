// Runs in headless Chromium (the tests beside it): plays a stream with the players
// from npm and reports what it saw. Hls and dashjs are globals of their UMD builds.
/* global Hls, dashjs */

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what, check, timeoutMs = 20000) {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function newVideo() {
  const video = document.createElement('video');
  video.muted = true;
  video.playsInline = true;
  document.body.append(video);
  return video;
}

/** Plays for a while from where it is: the time it advanced and the decoded size. */
async function playFor(video, seconds) {
  const from = video.currentTime;
  await until(`playback past ${from + seconds}`, () => video.currentTime >= from + seconds);
  return { advanced: video.currentTime - from, size: [video.videoWidth, video.videoHeight] };
}

async function seekToMiddle(video) {
  const middle = video.duration / 2;
  video.currentTime = middle;
  await until('the seek', () => !video.seeking && video.currentTime >= middle);
  const after = await playFor(video, 0.5);
  return { middle, at: video.currentTime, advanced: after.advanced };
}

/** The thumbnail track: its cues, and the first tile's sheet loaded as an image. */
async function loadThumbnails(trackUrl) {
  const video = newVideo();
  // A track from another origin (a bucket) loads only in CORS mode.
  video.crossOrigin = 'anonymous';
  const track = document.createElement('track');
  track.kind = 'metadata';
  track.src = trackUrl;
  video.append(track);
  track.track.mode = 'hidden';
  await until('the thumbnail track', () => track.readyState === 2 || track.readyState === 3);
  if (track.readyState === 3) throw new Error('the thumbnail track failed to load');
  const cues = [...track.track.cues].map((c) => ({
    start: c.startTime,
    end: c.endTime,
    text: c.text,
  }));
  const first = cues[0];
  const [sheet, fragment] = first.text.split('#xywh=');
  const image = new Image();
  image.src = new URL(sheet, trackUrl).href;
  await image.decode();
  return {
    cues,
    sheet: [image.naturalWidth, image.naturalHeight],
    tile: fragment.split(',').map(Number),
  };
}

window.playHls = async (url) => {
  const video = newVideo();
  const hls = new Hls({ capLevelToPlayerSize: false });
  const errors = [];
  hls.on(Hls.Events.ERROR, (_e, data) => errors.push(`${data.type}:${data.details}:${data.fatal}`));
  const parsed = new Promise((resolve) => hls.on(Hls.Events.MANIFEST_PARSED, resolve));
  hls.loadSource(url);
  hls.attachMedia(video);
  await parsed;
  await video.play();
  const first = await playFor(video, 1.5);
  const levels = hls.levels.map((l) => ({
    width: l.width,
    height: l.height,
    bitrate: l.bitrate,
    codecs: l.codecSet,
  }));
  const forced = [];
  for (let i = 0; i < hls.levels.length; i++) {
    hls.currentLevel = i;
    const level = hls.levels[i];
    await until(`level ${i}`, () => video.videoHeight === level.height && hls.currentLevel === i);
    forced.push({ level: i, ...(await playFor(video, 0.5)) });
  }
  const seek = await seekToMiddle(video);
  const duration = video.duration;
  hls.destroy();
  return {
    first,
    levels,
    forced,
    seek,
    duration,
    errors: errors.filter((e) => e.endsWith(':true')),
  };
};

window.playDash = async (url) => {
  const video = newVideo();
  const player = dashjs.MediaPlayer().create();
  const errors = [];
  player.on(dashjs.MediaPlayer.events.ERROR, (e) => errors.push(JSON.stringify(e.error ?? e)));
  player.updateSettings({
    debug: { logLevel: dashjs.Debug.LOG_LEVEL_NONE },
    streaming: { abr: { autoSwitchBitrate: { video: false } } },
  });
  const initialized = new Promise((resolve) =>
    player.on(dashjs.MediaPlayer.events.STREAM_INITIALIZED, resolve),
  );
  player.initialize(video, url, true);
  await initialized;
  await video.play();
  const first = await playFor(video, 1.5);
  const reps = player.getRepresentationsByType('video').map((r) => ({
    id: r.id,
    width: r.width,
    height: r.height,
    bandwidth: r.bandwidth,
    codecs: r.codecs,
  }));
  const forced = [];
  for (const rep of reps) {
    player.setRepresentationForTypeById('video', rep.id, true);
    await until(`representation ${rep.id}`, () => video.videoHeight === rep.height);
    forced.push({ id: rep.id, ...(await playFor(video, 0.5)) });
  }
  const seek = await seekToMiddle(video);
  const duration = video.duration;
  player.destroy();
  return { first, reps, forced, seek, duration, errors };
};

/**
 * Mean colour of each corner of the frame shown, over 3/20 of each side (as cornerColours in
 * test/support/media-checks.ts reads a decoded frame).
 */
function cornerColours(video) {
  const canvas = document.createElement('canvas');
  canvas.width = video.videoWidth;
  canvas.height = video.videoHeight;
  const context = canvas.getContext('2d', { willReadFrequently: true });
  context.drawImage(video, 0, 0);
  const w = Math.floor((canvas.width * 3) / 20);
  const h = Math.floor((canvas.height * 3) / 20);
  const mean = (x, y) => {
    const data = context.getImageData(x, y, w, h).data;
    const sum = [0, 0, 0];
    for (let i = 0; i < data.length; i += 4) for (let c = 0; c < 3; c++) sum[c] += data[i + c];
    const [r, g, b] = sum.map((v) => Math.round(v / (w * h)));
    return { r, g, b };
  };
  return {
    topLeft: mean(0, 0),
    topRight: mean(canvas.width - w, 0),
    bottomLeft: mean(0, canvas.height - h),
    bottomRight: mean(canvas.width - w, canvas.height - h),
  };
}

/** Each HLS rung played on its own from the start: its size and the corners of its picture at 0.3 s. */
window.hlsRungPictures = async (url) => {
  const pictures = [];
  for (let i = 0; ; i++) {
    const video = newVideo();
    const hls = new Hls({ startLevel: i, capLevelToPlayerSize: false });
    const errors = [];
    hls.on(Hls.Events.ERROR, (_e, d) => d.fatal && errors.push(`${d.type}:${d.details}`));
    const parsed = new Promise((resolve) => hls.on(Hls.Events.MANIFEST_PARSED, resolve));
    hls.loadSource(url);
    hls.attachMedia(video);
    await parsed;
    const level = hls.levels[i];
    hls.currentLevel = i;
    await video.play();
    await until(`level ${i} at 0.3 s`, () => video.currentTime >= 0.3 && video.videoHeight > 0);
    video.pause();
    pictures.push({
      level: { width: level.width, height: level.height },
      size: [video.videoWidth, video.videoHeight],
      corners: cornerColours(video),
      errors,
    });
    const levels = hls.levels.length;
    hls.destroy();
    video.remove();
    if (i + 1 >= levels) return pictures;
  }
};

window.loadThumbnails = loadThumbnails;
