import { expect } from 'chai';
import { parseRetryAfter, planRetry } from '../../services/notifier/retry-schedule.ts';

describe('callback retry schedule', () => {
  const policy = { backoffMs: 1000, backoffMaxMs: 60_000, horizonMs: 24 * 3600_000 };
  const first = new Date('2026-01-01T00:00:00Z');
  const now = new Date('2026-01-01T01:00:00Z');

  it('full jitter under an exponential ceiling, capped', () => {
    const at = (attempt: number, random: number) => {
      const plan = planRetry(policy, { attempt, firstAttemptAt: first }, now, () => random);
      return plan.retry ? plan.dueAt.getTime() - now.getTime() : -1;
    };
    expect(at(1, 0.999)).to.equal(999);
    expect(at(3, 0.5)).to.equal(2000);
    expect(at(30, 0.999)).to.equal(59_940);
    expect(at(3, 0)).to.equal(0);
  });

  it('Retry-After is a lower bound', () => {
    const plan = planRetry(
      policy,
      { attempt: 1, firstAttemptAt: first, retryAfterMs: 120_000 },
      now,
      () => 0.5,
    );
    expect(plan).to.deep.equal({ retry: true, dueAt: new Date(now.getTime() + 120_000) });
  });

  it('gives up when the next attempt would fall beyond the horizon', () => {
    const late = new Date(first.getTime() + policy.horizonMs - 500);
    expect(
      planRetry(policy, { attempt: 5, firstAttemptAt: first }, late, () => 0.9).retry,
    ).to.equal(false);
    expect(planRetry(policy, { attempt: 5, firstAttemptAt: first }, late, () => 0).retry).to.equal(
      true,
    );
    expect(
      planRetry(policy, { attempt: 1, firstAttemptAt: first, retryAfterMs: 25 * 3600_000 }, now)
        .retry,
    ).to.equal(false);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('30', now)).to.equal(30_000);
    expect(parseRetryAfter(new Date(now.getTime() + 5000).toUTCString(), now)).to.equal(5000);
    expect(parseRetryAfter('Thu, 01 Jan 1970 00:00:00 GMT', now)).to.equal(0);
    expect(parseRetryAfter('soon', now)).to.equal(undefined);
    expect(parseRetryAfter(undefined, now)).to.equal(undefined);
  });
});
