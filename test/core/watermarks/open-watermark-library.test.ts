import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../services/core/config.ts';
import { openWatermarkLibrary } from '../../../services/core/watermarks/open-watermark-library.ts';

describe('openWatermarkLibrary: where the configuration keeps the images', () => {
  let root: string;
  const png = Buffer.from('not checked here');
  const facts = { type: 'image/png', width: 1, height: 1 } as const;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'wm-open-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('WATERMARK_IMAGES_DIR wins over the all-in-one folder; neither and no fallback: none', async () => {
    const dir = join(root, 'configured');
    const library = openWatermarkLibrary(
      loadConfig({ WATERMARK_IMAGES_DIR: dir }),
      join(root, 'fallback'),
    );
    await library?.put('org1', 'logo', png, facts);
    expect(await readFile(join(dir, 'org1', 'logo'))).to.deep.equal(png);

    const fallback = openWatermarkLibrary(loadConfig({}), join(root, 'fallback'));
    await fallback?.put('org1', 'logo', png, facts);
    expect(await readFile(join(root, 'fallback', 'org1', 'logo'))).to.deep.equal(png);

    expect(openWatermarkLibrary(loadConfig({}))).to.equal(undefined);
  });

  it('WATERMARK_BUCKET takes a key id and secret together or neither', () => {
    expect(() =>
      openWatermarkLibrary(
        loadConfig({ WATERMARK_BUCKET: 'wm-bucket', WATERMARK_S3_ACCESS_KEY_ID: 'AKIAEXAMPLE' }),
      ),
    ).to.throw(ConfigError, /WATERMARK_S3_ACCESS_KEY_ID and WATERMARK_S3_SECRET_ACCESS_KEY/);
    const library = openWatermarkLibrary(loadConfig({ WATERMARK_BUCKET: 'wm-bucket' }));
    expect(library).to.have.property('close');
    (library as unknown as { close(): void }).close();
  });
});
