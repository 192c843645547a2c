import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { publishDuringEncode } from '../../services/streamer/publish-during-encode.ts';

describe('publishing segments while the encode goes on', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'early-'));
    await mkdir(join(dir, '360p'));
    await mkdir(join(dir, 'audio'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('uploads a segment once the next one of its rendition exists, never the last one', async () => {
    const uploaded: string[] = [];
    const early = publishDuringEncode({
      outDir: dir,
      renditions: ['360p', 'audio'],
      concurrency: 2,
      upload: async (key) => void uploaded.push(key),
    });
    await writeFile(join(dir, '360p/seg_00000.m4s'), 'a');
    await writeFile(join(dir, 'audio/seg_00000.m4s'), 'a');
    await sleep(700);
    expect(uploaded).to.deep.equal([]);
    await writeFile(join(dir, '360p/seg_00001.m4s'), 'b');
    await sleep(700);
    // Uploaded while "ffmpeg" still writes: before stop().
    expect(uploaded).to.deep.equal(['360p/seg_00000.m4s']);
    await writeFile(join(dir, '360p/seg_00002.m4s'), 'c');
    await sleep(700);
    const done = await early.stop();
    expect([...done].sort()).to.deep.equal(['360p/seg_00000.m4s', '360p/seg_00001.m4s']);
    expect(uploaded).to.not.include('360p/seg_00002.m4s');
    expect(uploaded).to.not.include('audio/seg_00000.m4s');
  });

  it('a failed upload: no new one starts, and stop() rejects with it', async () => {
    const early = publishDuringEncode({
      outDir: dir,
      renditions: ['360p'],
      concurrency: 1,
      upload: async (key) => {
        if (key.endsWith('seg_00000.m4s')) throw new Error('refused');
      },
    });
    for (const n of [0, 1, 2]) await writeFile(join(dir, `360p/seg_0000${n}.m4s`), 'x');
    await sleep(700);
    const error = await early.stop().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error).message).to.equal('refused');
  });
});
