import { expect } from 'chai';
import { setImmediate as turn } from 'node:timers/promises';
import { createLogWriter } from '../../../services/core/observability/log-writer.ts';

/** A descriptor that takes `room()` bytes a write (EAGAIN at 0), or fails with `fail`. */
function fakeFd(room: () => number, fail?: string) {
  const written: string[] = [];
  let calls = 0;
  return {
    written,
    calls: () => calls,
    writeSync: (_fd: number, data: Buffer): number => {
      calls++;
      if (fail) throw Object.assign(new Error(fail), { code: fail });
      const n = Math.min(room(), data.length);
      if (n === 0) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
      written.push(data.subarray(0, n).toString());
      return n;
    },
  };
}

describe('log writer', () => {
  it('writes the lines of one turn of the event loop in one write, in order', async () => {
    const fd = fakeFd(() => Infinity);
    const writer = createLogWriter({ fd: 1, maxBytes: 1000, writeSync: fd.writeSync });
    for (const i of [1, 2, 3]) writer.write(`line ${i}\n`);
    expect(fd.calls(), 'not within the log call').to.equal(0);
    await turn();
    expect(fd.written).to.deep.equal(['line 1\nline 2\nline 3\n']);
    expect(writer.dropped).to.equal(0);
  });

  it('a write cut short goes on from where it stopped', async () => {
    const fd = fakeFd(() => 4);
    const writer = createLogWriter({ fd: 1, maxBytes: 1000, writeSync: fd.writeSync });
    writer.write('abcdef\n');
    await turn();
    expect(fd.written.join('')).to.equal('abcdef\n');
  });

  it('a reader gone (EPIPE): lines are dropped and counted, reported once, and the exit flush returns at once', async () => {
    const reports: string[] = [];
    const fd = fakeFd(() => Infinity, 'EPIPE');
    const writer = createLogWriter({
      fd: 1,
      maxBytes: 1000,
      writeSync: fd.writeSync,
      report: (m) => reports.push(m),
    });
    writer.write('a\n');
    writer.write('b\n');
    await turn();
    writer.write('c\n');
    const started = Date.now();
    writer.flushSync({ stallMs: 60_000, maxMs: 60_000 });
    expect(Date.now() - started).to.be.below(100);
    expect(writer.dropped).to.equal(3);
    expect(fd.calls(), 'no write tried after the failure').to.equal(1);
    expect(reports).to.deep.equal([
      'log output failed (EPIPE): log lines are dropped from now on',
      '3 log lines dropped (log output failed: EPIPE)',
    ]);
  });

  it('a reader that does not read: lines wait up to maxBytes, then are dropped; the exit flush gives up after stallMs', async () => {
    const reports: string[] = [];
    let budget = 0; // bytes the reader takes before its pipe is full again
    const fd = fakeFd(() => {
      const n = budget;
      budget = 0;
      return n;
    });
    const writer = createLogWriter({
      fd: 1,
      maxBytes: 10,
      writeSync: fd.writeSync,
      report: (m) => reports.push(m),
    });
    for (const line of ['1234\n', '5678\n', 'full\n']) writer.write(line);
    await turn();
    expect(writer.dropped).to.equal(1);
    expect(reports).to.deep.equal(['log lines dropped: more than 10 bytes wait to be written']);
    budget = 3;
    const started = Date.now();
    writer.flushSync({ stallMs: 100, maxMs: 10_000 });
    const took = Date.now() - started;
    expect(took).to.be.within(100, 1000);
    expect(writer.dropped, 'the two lines waiting, one of them cut').to.equal(3);
    expect(reports.at(-1)).to.equal('3 log lines dropped');
  });

  it('a reader that reads slowly gets every line at exit, within maxMs', () => {
    let room = 0;
    const fd = fakeFd(() => (room = room === 0 ? 2 : 0));
    const writer = createLogWriter({ fd: 1, maxBytes: 1000, writeSync: fd.writeSync });
    writer.write('one\n');
    writer.write('two\n');
    writer.flushSync({ stallMs: 1000, maxMs: 5000 });
    expect(fd.written.join('')).to.equal('one\ntwo\n');
    expect(writer.dropped).to.equal(0);
  });
});
