import { expect } from 'chai';
import { createLogger, redact } from '../../../services/core/observability/logger.ts';

describe('logger', () => {
  it('writes one JSON line per record with constant message and fields', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'info', write: (l) => lines.push(l), base: { service: 's' } });
    log.debug('hidden');
    log.info('job.queued', { jobId: 'j1' });
    expect(lines).to.have.length(1);
    expect(JSON.parse(lines[0] ?? '')).to.include({ level: 'info', msg: 'job.queued', service: 's', jobId: 'j1' });
  });

  it('redacts secrets by field name, at any depth, and URL user info and query strings', () => {
    const out = JSON.stringify(
      redact({
        apiKey: 'k-123',
        inputCreds: { secretAccessKey: 'S' },
        nested: { list: [{ accountKey: 'A', private_key: 'P', password: 'x' }] },
        url: 'https://user:pw@host.example.com/a.mp4?X-Amz-Signature=abc',
        note: 'fetching https://h.example.com/p?sig=zzz failed',
        error: new Error('GET https://h.example.com/x?token=t1 failed'),
      }),
    );
    for (const secret of ['k-123', '"S"', '"A"', '"P"', 'pw@', 'abc', 'zzz', 't1']) expect(out).not.to.contain(secret);
    expect(out).to.contain('host.example.com/a.mp4');
  });
});
