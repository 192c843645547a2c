import { expect } from 'chai';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import type { JobRequested } from '../../../services/core/contracts/types.generated.ts';
import { admissionRefusal } from '../../../services/core/worker/admit-job.ts';
import { createAddressPolicy } from '../../../services/core/net/address-policy.ts';

const rules = {
  addressPolicy: createAddressPolicy({ allowPrivateNetworks: false }),
  contracts: loadContracts(),
};

/** A stream job as a direct Kafka producer would send it. */
const job = (more: Partial<JobRequested> = {}): JobRequested => ({
  jobId: '00000000-0000-4000-8000-000000000077',
  kind: 'stream',
  orgId: 'acme',
  attempt: 1,
  submittedAt: '2026-11-26T10:00:00Z',
  input: { url: 'https://files.example.com/in.mp4' },
  output: { url: 'https://files.example.com/streams/film/' },
  stream: {},
  ...more,
});

describe('admission of stream jobs produced straight to the bus: the rules of POST /streams', () => {
  it('takes a job the HTTP API would take', () => {
    expect(admissionRefusal(job(), rules, [])).to.equal(undefined);
    expect(
      admissionRefusal(job({ stream: { encoder: 'vp9', formats: ['dash'] } }), rules, []),
    ).to.equal(undefined);
  });

  it('refuses an output that is not a folder, naming the field of the event', () => {
    const refusal = admissionRefusal(
      job({ output: { url: 'https://files.example.com/out.m3u8' } }),
      rules,
      [],
    );
    expect(refusal?.reason).to.equal('invalid_event');
    expect(refusal?.message).to.match(/data\.output\.url must end with \//);
  });

  it('refuses vp9 with HLS, naming data.stream.formats', () => {
    const refusal = admissionRefusal(job({ stream: { encoder: 'vp9' } }), rules, []);
    expect(refusal?.message).to.match(/data\.stream\.formats must be \["dash"\]/);
  });

  it("refuses a watermark image on this machine's addresses, as for the other kinds", () => {
    const refusal = admissionRefusal(
      job({
        stream: {
          watermark: { imageUrl: 'http://127.0.0.1/w.png', width: 10, height: 10 },
        },
      }),
      rules,
      [],
    );
    expect(refusal?.reason).to.equal('url_forbidden');
    expect(refusal?.message).to.contain('data.stream.watermark.imageUrl');
  });
});
