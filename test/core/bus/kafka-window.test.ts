import { expect } from 'chai';
import {
  admit,
  commitPoint,
  decodeDone,
  encodeDone,
  finishedOffsets,
  forgetCommitted,
  marksQueued,
  newTrack,
  readyItems,
  type PartitionTrack,
  type WindowItem,
} from '../../../services/core/bus/kafka-window.ts';

let arrivals = 0;
const item = (
  track: PartitionTrack,
  offset: number,
  key: string,
  state: WindowItem['state'] = 'waiting',
): WindowItem => {
  const i: WindowItem = {
    topic: track.topic,
    partition: track.partition,
    offset: BigInt(offset),
    key,
    tenant: 'a',
    record: undefined,
    state,
    retryAt: 0,
    arrival: (arrivals += 1),
  };
  track.items.push(i);
  track.next = BigInt(offset) + 1n;
  return i;
};

describe('Kafka window: commits up to the first unfinished record', () => {
  it('commits the head offset and names finished records beyond it in the metadata', () => {
    const t = newTrack('t', 0, { offset: 10n, metadata: '' });
    const a = item(t, 10, 'a');
    item(t, 11, 'b', 'done');
    item(t, 12, 'c', 'running');
    item(t, 13, 'd', 'done');
    const point = commitPoint(t);
    expect(point?.offset).to.equal(10n);
    expect([...decodeDone(10n, point?.metadata)]).to.deep.equal([11n, 13n]);
    a.state = 'done';
    t.committed = point;
    expect(commitPoint(t)?.offset).to.equal(12n);
    expect(t.items.map((i) => i.offset)).to.deep.equal([12n, 13n]);
  });

  it('marks a partition whose records only wait in its commit, with or without finished ones', () => {
    const t = newTrack('t', 0, { offset: 10n, metadata: '' });
    item(t, 10, 'a');
    item(t, 11, 'b', 'done');
    t.queued = true;
    const point = commitPoint(t);
    expect(marksQueued(point?.metadata)).to.equal(true);
    expect([...decodeDone(10n, point?.metadata)]).to.deep.equal([11n]);
    // The reader of the list alone (the code before the mark) reads the same offsets.
    const list = (point?.metadata ?? '').slice('pc1:'.length).split(',');
    expect(list.map((p) => Number.parseInt(p, 36))).to.deep.equal([1]);
    t.committed = point;
    expect(commitPoint(t), 'nothing new to commit').to.equal(undefined);
    t.queued = false;
    const cleared = commitPoint(t);
    expect(cleared?.offset).to.equal(10n);
    expect(marksQueued(cleared?.metadata)).to.equal(false);
    // A new owner starts from what the commit says, so its first check can clear a stale mark.
    expect(newTrack('t', 0, { offset: 10n, metadata: 'pc1:;q' }).queued).to.equal(true);
    expect(marksQueued('')).to.equal(false);
  });

  it('after a restart, skips what an earlier owner finished and refetches the rest', () => {
    const t = newTrack('t', 0, { offset: 20n, metadata: encodeDone(20n, [21n, 23n]) });
    expect(admit(t, 19n)).to.equal('seen');
    expect(admit(t, 20n)).to.equal('new');
    expect(admit(t, 21n)).to.equal('finished');
    expect(admit(t, 22n)).to.equal('new');
    expect(admit(t, 23n)).to.equal('finished');
    item(t, 20, 'x', 'running');
    expect(admit(t, 20n), 'a record already in the window').to.equal('seen');
  });

  it('a record waits behind an unfinished record of its key, others do not', () => {
    const t = newTrack('t', 0, undefined);
    item(t, 0, 'job-1', 'running');
    item(t, 1, 'job-2');
    item(t, 2, 'job-1');
    const u = newTrack('t', 1, undefined);
    item(u, 0, 'job-3');
    expect(readyItems([t, u], Date.now()).map((i) => i.key)).to.deep.equal(['job-2', 'job-3']);
  });

  it('a finished record the head passed stays finished until a commit covers it, even if the commit fails', () => {
    const track = newTrack('t', 0, { offset: 10n, metadata: '' });
    item(track, 10, 'a', 'done');
    item(track, 11, 'b', 'running');
    const point = commitPoint(track);
    expect(point?.offset).to.equal(11n);
    // The commit failed: kafkajs fetches from 10 again, and 10 must not run a second time.
    expect(admit(track, 10n)).to.equal('finished');
    // A member that drops the track (a crash, a revoke) keeps what it finished.
    expect([...finishedOffsets(track)]).to.deep.equal([10n]);
    // Once a commit covers it, the committed offset says enough.
    track.committed = point;
    forgetCommitted(track);
    expect(track.doneBefore.size).to.equal(0);
    expect(admit(track, 10n)).to.equal('seen');
  });
});
