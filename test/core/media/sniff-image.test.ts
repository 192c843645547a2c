import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sniffImage } from '../../../services/core/media/sniff-image.ts';
import { generateImage } from '../../support/generate-clip.ts';

describe('sniffImage: type and size from the bytes', () => {
  let dir: string;
  const made: Record<string, Buffer> = {};

  before(async function () {
    this.timeout(30_000);
    dir = await mkdtemp(join(tmpdir(), 'sniff-'));
    const cases: [string, string[]][] = [
      ['a.png', []],
      ['a.jpg', []],
      ['lossy.webp', []],
      ['lossless.webp', ['-lossless', '1']],
    ];
    for (const [name, extra] of cases) {
      await generateImage(join(dir, name), { width: 320, height: 96, extra });
      made[name] = await readFile(join(dir, name));
    }
  });

  after(() => rm(dir, { recursive: true, force: true }));

  it('reads png, jpeg and both kinds of webp as ffmpeg wrote them', () => {
    expect(sniffImage(made['a.png'] ?? Buffer.alloc(0))).to.deep.equal({
      type: 'image/png',
      width: 320,
      height: 96,
    });
    expect(sniffImage(made['a.jpg'] ?? Buffer.alloc(0))).to.deep.include({
      type: 'image/jpeg',
      width: 320,
      height: 96,
    });
    for (const name of ['lossy.webp', 'lossless.webp'])
      expect(sniffImage(made[name] ?? Buffer.alloc(0)), name).to.deep.equal({
        type: 'image/webp',
        width: 320,
        height: 96,
      });
  });

  it('finds a JPEG frame header behind large metadata segments', () => {
    const jpeg = made['a.jpg'] ?? Buffer.alloc(0);
    const app1 = Buffer.alloc(4 + 60_000);
    app1.writeUInt16BE(0xffe1, 0);
    app1.writeUInt16BE(60_002, 2);
    const withExif = Buffer.concat([jpeg.subarray(0, 2), app1, app1, jpeg.subarray(2)]);
    expect(sniffImage(withExif)).to.deep.include({ width: 320, height: 96 });
  });

  it('reads an extended (VP8X) webp header', () => {
    const b = Buffer.alloc(30);
    b.write('RIFF', 0, 'latin1');
    b.write('WEBPVP8X', 8, 'latin1');
    b.writeUIntLE(4999, 24, 3);
    b.writeUIntLE(2, 27, 3);
    expect(sniffImage(b)).to.deep.equal({ type: 'image/webp', width: 5000, height: 3 });
  });

  it('refuses anything else, and truncated headers, without throwing', () => {
    const png = made['a.png'] ?? Buffer.alloc(0);
    const jpeg = made['a.jpg'] ?? Buffer.alloc(0);
    for (const bad of [
      Buffer.alloc(0),
      Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'),
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
      png.subarray(0, 20),
      jpeg.subarray(0, 12),
      Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x01]),
      Buffer.concat([Buffer.from('RIFF\0\0\0\0WEBPVP8 ', 'latin1'), Buffer.alloc(20)]),
    ])
      expect(sniffImage(bad), bad.toString('hex').slice(0, 24)).to.equal(undefined);
  });
});
