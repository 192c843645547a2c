import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { topics } from '../../../services/core/bus/event-bus.ts';
import { loadContracts } from '../../../services/core/contracts/load-contracts.ts';
import { createEventCodec } from '../../../services/core/events/event-codec.ts';

const codec = createEventCodec(loadContracts(), 'test');

const data = (jobId: string): Record<string, unknown> => ({
  jobId,
  kind: 'transcode',
  orgId: 'acme',
  attempt: 1,
  submittedAt: '2026-11-23T10:00:00Z',
  input: { url: 'https://files.example.com/in.mp4' },
  output: { url: 'https://files.example.com/out.mp4' },
  transcode: { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' },
});

const required = (jobId: string): Record<string, unknown> => ({
  specversion: '1.0',
  id: 'e-1',
  source: 'other-system',
  type: 'media.job.requested',
  data: data(jobId),
});
const value = (event: unknown): Buffer => Buffer.from(JSON.stringify(event));

describe('event codec: the CloudEvents Kafka protocol binding', () => {
  describesStructuredModeOnlyRequired();

  describesRefusesWhatItCannotUse();

  describesServicesOwnEvents();
});

function describesStructuredModeOnlyRequired(): void {
  it('structured mode with only the required attributes, with or without content-type; time is filled in', () => {
    const jobId = randomUUID();
    for (const headers of [{}, { 'content-type': 'application/cloudevents+json; charset=utf-8' }]) {
      const decoded = codec.decode({ value: value(required(jobId)), headers });
      expect(decoded.ok, JSON.stringify(decoded)).to.equal(true);
      if (decoded.ok) {
        expect(decoded.event.data).to.deep.equal(data(jobId));
        expect(Date.parse(decoded.event.time)).to.be.closeTo(Date.now(), 5000);
      }
    }
  });

  it('binary mode: attributes from ce_ headers, the value is the data, content-type its type', () => {
    const jobId = randomUUID();
    const headers = {
      ce_specversion: '1.0',
      ce_id: 'e-2',
      ce_source: 'other-system',
      ce_type: 'media.job.requested',
      ce_subject: jobId,
      ce_time: '2026-11-23T10:00:00Z',
      ce_traceparent: '00-abc-def-01',
      'content-type': 'application/json',
    };
    const decoded = codec.decode({ value: value(data(jobId)), headers });
    expect(decoded.ok, JSON.stringify(decoded)).to.equal(true);
    if (decoded.ok)
      expect(decoded.event).to.deep.include({
        id: 'e-2',
        subject: jobId,
        time: '2026-11-23T10:00:00Z',
        datacontenttype: 'application/json',
      });
  });

  it('extension attributes are accepted in structured mode too', () => {
    const jobId = randomUUID();
    expect(
      codec.decode({ value: value({ ...required(jobId), partitionkey: jobId, traceparent: 'x' }) })
        .ok,
    ).to.equal(true);
  });
}

function describesRefusesWhatItCannotUse(): void {
  it('refuses what it cannot use, and says why, keeping the data for the job owner', () => {
    const jobId = randomUUID();
    const cases: [Parameters<typeof codec.decode>[0], RegExp][] = [
      [
        { value: value({ ...required(jobId), subject: randomUUID() }) },
        /subject is not the job id/,
      ],
      [
        { value: value(required(jobId)), headers: { 'content-type': 'text/plain' } },
        /neither structured mode/,
      ],
      [
        {
          value: Buffer.from('<xml/>'),
          headers: {
            ce_specversion: '1.0',
            ce_id: 'x',
            ce_source: 's',
            ce_type: 'media.job.requested',
            'content-type': 'application/xml',
          },
        },
        /data must be JSON/,
      ],
      [
        { value: value({ ...required(jobId), data: { ...data(jobId), attempt: 0 } }) },
        /^media\.job\.requested: data\.attempt must be >= 1/,
      ],
      [
        { value: value({ ...required(jobId), source: undefined }) },
        /^envelope: source is required/,
      ],
    ];
    for (const [record, reason] of cases) {
      const decoded = codec.decode(record);
      expect(decoded.ok).to.equal(false);
      if (!decoded.ok) expect(decoded.reason).to.match(reason);
    }
    const refused = codec.decode(cases[3]![0]);
    expect(refused).to.deep.include({ type: 'media.job.requested' });
    expect(refused.ok === false && (refused.data as { jobId: string }).jobId).to.equal(jobId);
  });
}

function describesServicesOwnEvents(): void {
  it("the service's own events stay structured and carry every attribute", () => {
    const record = codec.encode(
      topics.transcodeRequests,
      'media.job.requested',
      data(randomUUID()) as never,
    );
    expect(record.headers?.['content-type']).to.match(/^application\/cloudevents\+json/);
    const event = JSON.parse(record.value.toString()) as Record<string, unknown>;
    expect(Object.keys(event).sort()).to.deep.equal([
      'data',
      'datacontenttype',
      'dataschema',
      'id',
      'source',
      'specversion',
      'subject',
      'time',
      'type',
    ]);
  });
}
