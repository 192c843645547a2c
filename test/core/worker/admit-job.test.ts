import { expect } from 'chai';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import type {
  CaptionFile,
  JobRequested,
  TranscodeSpec,
} from '../../../services/core/contracts/types.generated.ts';
import { admissionRefusal } from '../../../services/core/worker/admit-job.ts';
import { createAddressPolicy } from '../../../services/core/net/address-policy.ts';

const rules = {
  addressPolicy: createAddressPolicy({ allowPrivateNetworks: false }),
  contracts: loadContracts(),
};

/** A transcode job with `captions`, as a direct Kafka producer would send it. */
const job = (captions: TranscodeSpec['captions']): JobRequested => ({
  jobId: '00000000-0000-4000-8000-000000000078',
  kind: 'transcode',
  orgId: 'acme',
  attempt: 1,
  submittedAt: '2026-11-28T10:00:00Z',
  input: { url: 'https://files.example.com/in.mp4' },
  output: { url: 'https://files.example.com/out.mp4' },
  transcode: {
    encoder: 'h264',
    container: 'mp4',
    bitrateKbps: '1000',
    ...(captions ? { captions } : {}),
  },
});

const file = (url: string): CaptionFile => ({ url, language: 'en', label: 'English' });

describe('admission of transcode jobs with captions produced straight to the bus', () => {
  it('takes caption files on public addresses', () => {
    const captions: TranscodeSpec['captions'] = {
      files: [file('https://files.example.com/en.srt')],
    };
    expect(admissionRefusal(job(captions), rules, [])).to.equal(undefined);
  });

  it("refuses a caption file on this machine's addresses, naming its place in the event", () => {
    const captions: TranscodeSpec['captions'] = {
      files: [file('https://files.example.com/en.srt'), file('http://127.0.0.1/de.vtt')],
    };
    const refusal = admissionRefusal(job(captions), rules, []);
    expect(refusal?.reason).to.equal('url_forbidden');
    expect(refusal?.message).to.match(/^data\.transcode\.captions\.files\[1\]\.url points at/);
  });

  it('refuses captions the HTTP API refuses, in the terms of the event', () => {
    const refusal = admissionRefusal(
      job({ files: [{ ...file('https://x.example/a.srt'), language: 'english' }] }),
      rules,
      [],
    );
    expect(refusal?.reason).to.equal('invalid_event');
    expect(refusal?.message).to.equal(
      'data.transcode.captions.files[0].language must be a BCP 47 language tag such as en or pt-BR',
    );
  });
});
