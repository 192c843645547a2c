import { expect } from 'chai';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AllInOne } from '../../services/all-in-one/start-all-in-one.ts';
import { startTestServer, type TestServer } from '../support/file-server.ts';
import { startTestAllInOne } from '../support/in-process-service.ts';
import {
  expectRedLogoTopLeft,
  transcodeWithNamedWatermark,
  uploadRedLogo,
} from '../support/watermark-job.ts';

const KEY_A = 'wm-e2e-key-a-0123456789';
const KEY_B = 'wm-e2e-key-b-0123456789';

describe('all-in-one: a watermark uploaded with PUT /watermarks is used by imageName', function () {
  this.timeout(180_000);
  let files: TestServer;
  let app: AllInOne;
  let dataDir: string;

  before(async () => {
    files = await startTestServer();
    dataDir = await mkdtemp(join(tmpdir(), 'media-wm-e2e-'));
    app = await startTestAllInOne(dataDir, {
      API_KEYS: `${KEY_A}:org-a,${KEY_B}:org-b`,
      RETRY_BACKOFF_MS: '50',
    });
  });

  after(async () => {
    await app?.close();
    await files?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('with no library configured, keeps it in $DATA_DIR/watermarks and burns it in', async () => {
    const stored = await uploadRedLogo(app, files, KEY_A, 'brand');
    expect(stored.status).to.equal(201);
    expect(await readdir(join(dataDir, 'watermarks', 'org-a'))).to.deep.equal(['brand']);
    const done = await transcodeWithNamedWatermark(app, files, KEY_A, 'brand', 'wm-out.mp4');
    expect(done['status'], JSON.stringify(done)).to.equal('succeeded');
    await expectRedLogoTopLeft(join(files.dir, 'wm-out.mp4'));
  });

  it("another organisation's name is not found: the job fails with watermark_unavailable", async () => {
    const done = await transcodeWithNamedWatermark(app, files, KEY_B, 'brand', 'wm-never.mp4');
    expect(done['status']).to.equal('failed');
    expect(done['code']).to.equal('watermark_unavailable');
    expect(done['message']).to.equal('no watermark image named "brand" for this organisation');
  });
});
