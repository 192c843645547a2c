import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  parsePsnrLine,
  parseSsimLine,
  readPsnrLog,
  readVmafLog,
  vmafRowParser,
} from '../../../services/core/media/quality-logs.ts';

describe('quality logs', () => {
  let dir: string;
  before(async () => (dir = await mkdtemp(join(tmpdir(), 'quality-logs-'))));
  after(() => rm(dir, { recursive: true, force: true }));

  it("reads a psnr stats line's frame, luma MSE and luma PSNR; inf is the 100 dB ceiling", () => {
    expect(
      parsePsnrLine(
        'n:1 mse_avg:4.54 mse_y:6.09 mse_u:2.00 mse_v:0.88 psnr_avg:41.56 psnr_y:40.28 psnr_u:45.13 psnr_v:48.68 ',
      ),
    ).to.deep.equal({ n: 1, mseY: 6.09, psnrY: 40.28 });
    expect(
      parsePsnrLine('n:7 mse_avg:0.00 mse_y:0.00 mse_u:0.00 mse_v:0.00 psnr_avg:inf psnr_y:inf'),
    ).to.deep.equal({ n: 7, mseY: 0, psnrY: 100 });
    expect(parsePsnrLine('')).to.equal(undefined);
    expect(parsePsnrLine('n:2 mse_y:x psnr_y:40')).to.equal(undefined);
  });

  it("reads an ssim stats line's frame and luma SSIM (not All, not U)", () => {
    expect(
      parseSsimLine('n:2 Y:0.975252 U:0.980771 V:0.990104 All:0.978647 (16.705397)'),
    ).to.deep.equal({ n: 2, ssimY: 0.975252 });
    expect(parseSsimLine('garbage')).to.equal(undefined);
  });

  it('finds the Frame and vmaf columns by name, wherever libvmaf puts them', () => {
    const parse = vmafRowParser('Frame,integer_adm2,vmaf,integer_motion2,');
    expect(parse?.('4,0.94,81.85,1.44,')).to.deep.equal({ frame: 4, vmaf: 81.85 });
    expect(parse?.('4,0.94')).to.equal(undefined);
    expect(vmafRowParser('a,b,c')).to.equal(undefined);
  });

  it('reads whole logs line by line, skipping what is not a frame', async () => {
    const psnr = join(dir, 'p.log');
    await writeFile(psnr, 'n:1 mse_y:1.00 psnr_y:48.13\n\nn:2 mse_y:4.00 psnr_y:42.11\n');
    expect(await readPsnrLog(psnr)).to.deep.equal([
      { n: 1, mseY: 1, psnrY: 48.13 },
      { n: 2, mseY: 4, psnrY: 42.11 },
    ]);
    const vmaf = join(dir, 'v.csv');
    await writeFile(vmaf, 'Frame,integer_adm2,vmaf,\n0,0.9,88.3,\n4,0.9,81.8,\n');
    expect(await readVmafLog(vmaf)).to.deep.equal([
      { frame: 0, vmaf: 88.3 },
      { frame: 4, vmaf: 81.8 },
    ]);
    await writeFile(vmaf, 'not,a,vmaf,log\n');
    let error: unknown;
    await readVmafLog(vmaf).catch((e: unknown) => (error = e));
    expect(String(error)).to.contain('no Frame and vmaf columns');
  });
});
