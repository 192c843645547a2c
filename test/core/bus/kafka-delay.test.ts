import { expect } from 'chai';
import { topics } from '../../../services/core/bus/event-bus.ts';
import { delayHeaders, routeRecord } from '../../../services/core/bus/kafka-delay.ts';

const now = 1_000_000;
const record = (notBefore?: number) => ({
  topic: topics.transcodeRequests,
  key: 'k',
  value: Buffer.from('v'),
  headers: { 'ce-type': 'media.job.requested' },
  ...(notBefore === undefined ? {} : { notBefore }),
});

describe('Kafka delay tiers: routing', () => {
  it('sends a record that is due (or has no due time) straight to its topic, headers untouched', () => {
    for (const r of [record(), record(now), record(now - 5)])
      expect(routeRecord(r, now)).to.deep.equal({
        topic: topics.transcodeRequests,
        headers: { 'ce-type': 'media.job.requested' },
      });
  });

  it('picks the largest tier not longer than the remaining delay, the smallest for short ones', () => {
    const tierOf = (delayMs: number): string => routeRecord(record(now + delayMs), now).topic;
    expect(tierOf(1)).to.equal(topics.delay1s);
    expect(tierOf(9_999)).to.equal(topics.delay1s);
    expect(tierOf(10_000)).to.equal(topics.delay10s);
    expect(tierOf(59_999)).to.equal(topics.delay10s);
    expect(tierOf(25 * 60_000)).to.equal(topics.delay10m);
    expect(tierOf(24 * 3600_000)).to.equal(topics.delay1h);
  });

  it('carries the target, the due time and the enqueue time in headers', () => {
    expect(routeRecord(record(now + 3000), now).headers).to.deep.equal({
      'ce-type': 'media.job.requested',
      [delayHeaders.target]: topics.transcodeRequests,
      [delayHeaders.due]: String(now + 3000),
      [delayHeaders.enqueued]: String(now),
    });
  });
});
