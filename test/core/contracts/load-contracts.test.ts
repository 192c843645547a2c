import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';

describe('contracts', () => {
  it('the generated TypeScript types match the schemas (not stale)', async function () {
    this.timeout(30_000);
    const run = promisify(execFile);
    await run(process.execPath, ['scripts/generate-types.ts', '--check']);
  });

  it('compiles every schema with one strict ajv instance', () => {
    const contracts = loadContracts();
    expect(Object.keys(contracts.events)).to.have.length(9);
  });

  it('rejects a requested event that carries credentials in clear', () => {
    const { events } = loadContracts();
    const check = events['media.job.requested']({
      jobId: '6f1c1f0e-8a51-4d4e-9d53-5b7a4d1f8a10',
      kind: 'transcode',
      orgId: 'o',
      attempt: 1,
      submittedAt: '2026-01-01T00:00:00.000000Z',
      input: {
        url: 's3://bucket-1/in.mp4',
        creds: { region: 'us-east-1', accessKeyId: 'a', secretAccessKey: 'b' },
      },
      output: { url: 'https://h.example.com/o.mp4' },
      transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
    });
    expect(check.ok).to.equal(false);
  });

  it('refuses an orgId that could name a path outside its own folder (events may come from other producers)', () => {
    const { events } = loadContracts();
    const job = (orgId: string) => ({
      jobId: '6f1c1f0e-8a51-4d4e-9d53-5b7a4d1f8a10',
      kind: 'transcode',
      orgId,
      attempt: 1,
      submittedAt: '2026-01-01T00:00:00.000000Z',
      input: { url: 'https://h.example.com/in.mp4' },
      output: { url: 'https://h.example.com/o.mp4' },
      transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
    });
    for (const orgId of ['..', '.', '.hidden', '../other', 'a/b', 'a\\b', '']) {
      const check = events['media.job.requested'](job(orgId));
      expect(check.ok, orgId).to.equal(false);
      if (!check.ok && orgId === '..') expect(check.message).to.contain('orgId');
    }
    for (const orgId of ['org1', 'acme.eu', 'a..b', 'A_b-9'])
      expect(events['media.job.requested'](job(orgId)).ok, orgId).to.equal(true);
  });

  it('takes loudness on the direct-to-Kafka job events of each kind, checked as over HTTP', () => {
    const { events } = loadContracts();
    const base = {
      jobId: '6f1c1f0e-8a51-4d4e-9d53-5b7a4d1f8a10',
      orgId: 'o',
      attempt: 1,
      submittedAt: '2026-01-01T00:00:00.000000Z',
      input: { url: 'https://h.example.com/in.mp4' },
      output: { url: 'https://h.example.com/o/' },
    };
    const loudness = { targetLufs: -23, truePeakDbtp: -2 };
    const jobs = [
      {
        kind: 'transcode',
        transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000', loudness },
      },
      { kind: 'summary', summary: { format: 'mp4', loudness } },
      { kind: 'stream', stream: { loudness } },
    ];
    for (const job of jobs) {
      expect(events['media.job.requested']({ ...base, ...job }).ok, job.kind).to.equal(true);
      const [key, spec] = Object.entries(job).find(([k]) => k !== 'kind') ?? [];
      const bad = {
        ...base,
        kind: job.kind,
        [key as string]: { ...(spec as object), loudness: { targetLufs: 0 } },
      };
      const check = events['media.job.requested'](bad);
      expect(check.ok, job.kind).to.equal(false);
      if (!check.ok) expect(check.message, job.kind).to.contain('loudness');
    }
  });
});
