import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { joinRendition } from '../../services/streamer/measure-rungs.ts';

describe('joining a rendition for its quality report', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'measure-rungs-'));
    await writeFile(join(dir, 'init_0.mp4'), 'INIT');
    await writeFile(join(dir, 'seg_00000.m4s'), 'first-');
    await writeFile(join(dir, 'seg_00001.m4s'), 'second');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const segment = (uri: string) => ({ uri, durationSeconds: 2, bytes: 0, decodeTime: 0 });

  it('writes the init segment, then the media segments in the order the rendition lists them', async () => {
    const path = join(dir, 'joined.mp4');
    await joinRendition(
      dir,
      { init: 'init_0.mp4', segments: [segment('seg_00001.m4s'), segment('seg_00000.m4s')] },
      path,
    );
    expect(await readFile(path, 'utf8')).to.equal('INITsecondfirst-');
  });

  it('fails on a segment that is not there', async () => {
    const path = join(dir, 'broken.mp4');
    let error: unknown;
    await joinRendition(
      dir,
      { init: 'init_0.mp4', segments: [segment('seg_00009.m4s')] },
      path,
    ).catch((e: unknown) => (error = e));
    expect(error).to.have.property('code', 'ENOENT');
  });
});
