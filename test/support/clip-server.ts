import { join } from 'node:path';
import { startTestServer, type TestServer } from './file-server.ts';
import { generateClip, type ClipOptions } from './generate-clip.ts';

/** One second at 320×240: a job on it ends almost at once. */
export const SHORT_CLIP: ClipOptions = { seconds: 1, width: 320, height: 240 };

/** Noisy 720p of `seconds`: about real time to encode on two cores, so a test can act mid-encode. */
export function longClip(seconds: number): ClipOptions {
  return { seconds, width: 1280, height: 720, noise: true };
}

/**
 * A file server (`startTestServer`) holding these generated clips, by file name, under `/files/`.
 * The server is closed again when a clip cannot be made.
 */
export async function serveClips(clips: Record<string, ClipOptions>): Promise<TestServer> {
  const files = await startTestServer();
  try {
    for (const [name, options] of Object.entries(clips))
      await generateClip(join(files.dir, name), options);
  } catch (error) {
    await files.close();
    throw error;
  }
  return files;
}
