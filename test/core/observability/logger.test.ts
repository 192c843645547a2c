import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { createLogger, redact } from '../../../services/core/observability/logger.ts';

describe('logger', () => {
  describesWritesStdoutAsynchronouslyStill();

  for (const reader of ['gone', 'not reading'] as const)
    it(`a process whose stdout reader is ${reader} still exits at once, and says on stderr how many lines it dropped`, async function () {
      this.timeout(20_000);
      const logger = new URL('../../../services/core/observability/logger.ts', import.meta.url)
        .href;
      // 4 MiB of lines: far more than a pipe holds, so the exit flush meets a full pipe.
      const script = `
        import { createLogger } from ${JSON.stringify(logger)};
        const log = createLogger({ level: 'info' });
        process.stdin.once('data', () => {
          for (let i = 0; i < 20000; i++) log.info('line', { i, pad: 'x'.repeat(180) });
          process.exit(3);
        });`;
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      if (reader === 'gone') child.stdout.destroy();
      else child.stdout.pause();
      child.stdin.write('go\n');
      const started = Date.now();
      // A process that hangs is not left behind when the test fails.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      child.stdout.destroy();
      // LOG_EXIT_FLUSH: a reader that takes nothing for a second is given up.
      expect(Date.now() - started).to.be.below(5000);
      expect(code).to.equal(3);
      expect(stderr).to.match(/media-service: \d+ log lines dropped/);
    });

  describesWritesJSONLinePer();

  describesPinoUnderneathErrorSerializer();
});

function describesWritesStdoutAsynchronouslyStill(): void {
  it('writes to stdout asynchronously, and still every line when the process exits at once', () => {
    const logger = new URL('../../../services/core/observability/logger.ts', import.meta.url).href;
    const script = `
      import { createLogger } from ${JSON.stringify(logger)};
      const log = createLogger({ level: 'info' });
      const other = createLogger({ level: 'info' });
      for (let i = 0; i < 2000; i++) (i % 2 ? other : log).info('line', { i });
      log.error('last.words', { reason: 'exiting' });
      process.exit(3);`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(run.status).to.equal(3);
    const lines = run.stdout.trim().split('\n');
    expect(lines).to.have.length(2001);
    // Two loggers, one writer: every line whole and in the order logged.
    expect(lines.slice(0, 2000).map((l) => (JSON.parse(l) as { i: number }).i)).to.deep.equal(
      Array.from({ length: 2000 }, (_, i) => i),
    );
    expect(JSON.parse(lines[1999] ?? '{}')).to.include({ msg: 'line', i: 1999 });
    expect(JSON.parse(lines[2000] ?? '{}')).to.include({ msg: 'last.words', level: 'error' });
  });
}

function describesWritesJSONLinePer(): void {
  it('writes one JSON line per record with constant message and fields', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      write: (l) => lines.push(l),
      base: { service: 's' },
    });
    log.debug('hidden');
    log.info('job.queued', { jobId: 'j1' });
    expect(lines).to.have.length(1);
    expect(JSON.parse(lines[0] ?? '')).to.include({
      level: 'info',
      msg: 'job.queued',
      service: 's',
      jobId: 'j1',
    });
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
    for (const secret of ['k-123', '"S"', '"A"', '"P"', 'pw@', 'abc', 'zzz', 't1'])
      expect(out).not.to.contain(secret);
    expect(out).to.contain('host.example.com/a.mp4');
  });

  it('logs an error with its stack and cause chain, secrets in them redacted', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'info', write: (l) => lines.push(l) });
    const root = Object.assign(
      new Error('connect ECONNREFUSED https://h.example.com/x?sig=s3cr3t'),
      { code: 'ECONNREFUSED' },
    );
    log.error('job.internal_error', { error: new Error('upload failed', { cause: root }) });
    const record = JSON.parse(lines[0] ?? '') as {
      error: {
        message: string;
        stack: string;
        cause: { code: string; stack: string; message: string };
      };
    };
    expect(record.error.message).to.equal('upload failed');
    expect(record.error.stack).to.contain('logger.test.ts');
    expect(record.error.cause.code).to.equal('ECONNREFUSED');
    expect(record.error.cause.stack).to.contain('logger.test.ts');
    expect(lines[0]).not.to.contain('s3cr3t');
  });
}

function describesPinoUnderneathErrorSerializer(): void {
  it('is pino underneath: its error serializer (type, own fields, aggregated errors) and a non-Error cause kept', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      write: (l) => lines.push(l),
      base: { service: 's' },
    });
    class UploadError extends Error {
      override name = 'UploadError';
      status = 503;
    }
    log.warn('job.failure_detail', {
      error: new UploadError('PUT failed', {
        cause: 'socket hang up at https://u:p@h.example.com/o',
      }),
      others: new AggregateError(
        [new Error('a'), new Error('b https://h.example.com/?x=zz')],
        'all',
      ),
    });
    const record = JSON.parse(lines[0] ?? '') as Record<string, Record<string, unknown>>;
    expect(record['error']).to.include({ type: 'UploadError', message: 'PUT failed', status: 503 });
    expect(record['error']?.['cause']).to.equal(
      'socket hang up at https://[redacted]@h.example.com/o',
    );
    expect(record['others']?.['aggregateErrors']).to.have.length(2);
    expect(lines[0]).not.to.contain('zz');
    expect(record).to.include({ level: 'warn', service: 's', msg: 'job.failure_detail' });
    const time = record['time'] as unknown as string;
    expect(new Date(time).toISOString()).to.equal(time);
  });

  it('a child carries its bindings (the job id) on every line, redacted once', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'debug', write: (l) => lines.push(l) });
    const child = log.child({ jobId: 'j-1', url: 'https://h.example.com/a?token=t0' });
    child.debug('job.step');
    child.info('job.succeeded', { sizeBytes: 3 });
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).to.satisfy(
      (records: Record<string, unknown>[]) => records.every((r) => r['jobId'] === 'j-1'),
    );
    expect(lines.join('\n')).not.to.contain('t0');
  });
}
