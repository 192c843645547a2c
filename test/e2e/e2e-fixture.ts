import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { longClip, serveClips } from '../support/clip-server.ts';
import type { TestServer } from '../support/file-server.ts';

/** What a suite that runs all-in-one as a process works with; set in `before`. */
export interface ProcessDirs {
  /** A file server holding `input.mp4`, a 30 s clip: long enough to stop the process mid-encode. */
  files: TestServer;
  /** DATA_DIR and WORK_DIR of the process (a restart on the same ones resumes). */
  dataDir: string;
  workDir: string;
}

/** Makes the file server and the two directories before the suite, and removes them after it. */
export function useProcessDirs(name: string): ProcessDirs {
  const dirs = {} as ProcessDirs;
  before(async () => {
    dirs.files = await serveClips({ 'input.mp4': longClip(30) });
    dirs.dataDir = await mkdtemp(join(tmpdir(), `media-${name}-`));
    dirs.workDir = await mkdtemp(join(tmpdir(), `media-${name}-work-`));
  });
  after(async () => {
    await dirs.files.close();
    await rm(dirs.dataDir, { recursive: true, force: true });
    await rm(dirs.workDir, { recursive: true, force: true });
  });
  return dirs;
}
