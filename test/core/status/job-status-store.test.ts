import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import {
  createJobStatusStore,
  ID_MARK,
  packText,
  RECENT_TEXTS,
} from '../../../services/core/status/job-status-store.ts';
import { jobResult } from '../../support/job-requests.ts';

/** A finished job with a callback as the view keeps it: its id in it several times. */
const finished = (id: string, extra: Record<string, unknown> = {}): string => {
  const webhookId = `${id}:media.job.succeeded:1`;
  const result = jobResult(`https://media.example.com/out/${id}.mp4`);
  return JSON.stringify({
    id,
    orgId: 'org-a',
    type: 'transcode',
    status: 'succeeded',
    createdAt: '2026-11-23T10:00:00.000Z',
    updatedAt: '2026-11-23T10:00:09.000Z',
    attempt: 1,
    progressPercent: 100,
    result,
    finalCallback: {
      url: 'https://hooks.example.com/done',
      webhookId,
      body: { eventId: webhookId, jobId: id, kind: 'transcode', status: 'succeeded', result },
    },
    callback: { state: 'delivered', webhookId, attempts: 1, lastStatus: 200 },
    rev: 1_795_000_000_000_000,
    ...extra,
  });
};

describe('job status store', () => {
  for (const recent of [0, 2, RECENT_TEXTS]) {
    describe(`with ${recent} texts kept uncompressed`, () => {
      it('gives back every text exactly as it was set, recent or compressed', () => {
        const store = createJobStatusStore({ recent });
        const texts = new Map<string, string>();
        for (let i = 0; i < 20; i++) {
          const id = randomUUID();
          // Non-ASCII text (an error message, a URL) and escaped control characters too.
          const text = finished(id, {
            error: {
              code: 'x',
              message: `échec « ${i} » 失败 \u0001 \\u0001 ${'a'.repeat(i * 300)}`,
            },
          });
          texts.set(id, text);
          store.set(id, text);
        }
        expect(store.size).to.equal(20);
        for (const [id, text] of texts) expect(store.get(id)).to.equal(text);
        expect(store.get(randomUUID())).to.equal(undefined);
      });

      it('restores the id where the text names it, and a mark the id stood for only', () => {
        const store = createJobStatusStore({ recent });
        // An id that is not a UUID, and a text that names it at its edges and back to back.
        const id = 'job-1';
        const text = `job-1{"a":"job-1job-1","b":"job-12","c":"JOB-1 job-"}job-1`;
        store.set(id, text);
        store.set('other', '{}');
        store.set('third', '{}');
        expect(store.get(id)).to.equal(text);
        // The same text under another key keeps the first id as text, not as a mark.
        store.set('job-2', text);
        store.set('x', '{}');
        store.set('y', '{}');
        expect(store.get('job-2')).to.equal(text);
        expect(store.get('job-2')).to.not.include(ID_MARK);
      });

      it('keeps the order of the last set: the oldest first, a set makes a job the newest', () => {
        const store = createJobStatusStore({ recent });
        for (const id of ['a', 'b', 'c', 'd', 'e']) store.set(id, finished(id));
        expect(store.oldest()).to.equal('a');
        store.set('a', finished('a', { status: 'failed' }));
        expect(store.oldest()).to.equal('b');
        const order: string[] = [];
        for (let o = store.oldest(); o !== undefined; o = store.oldest()) {
          order.push(o);
          expect(store.delete(o)).to.equal(true);
        }
        expect(order).to.deep.equal(['b', 'c', 'd', 'e', 'a']);
        expect(store.size).to.equal(0);
        expect(store.oldest()).to.equal(undefined);
        expect(store.get('a')).to.equal(undefined);
        expect(store.delete('a')).to.equal(false);
      });

      it('replaces a text on a second set, and deletes wherever the text is', () => {
        const store = createJobStatusStore({ recent });
        store.set('a', finished('a'));
        store.set('b', finished('b'));
        store.set('c', finished('c'));
        store.set('a', finished('a', { attempt: 2 }));
        expect(store.size).to.equal(3);
        expect(JSON.parse(store.get('a') ?? '{}')).to.include({ attempt: 2 });
        expect(store.delete('b')).to.equal(true);
        expect(store.delete('a')).to.equal(true);
        expect(store.size).to.equal(1);
        expect(store.get('b')).to.equal(undefined);
        expect(store.get('c')).to.equal(finished('c'));
      });
    });
  }

  describesKeepsQueuedRunningJob();
});

function describesKeepsQueuedRunningJob(): void {
  it('keeps a queued or running job whole, and compresses it once it is set as ended', () => {
    const store = createJobStatusStore({ recent: 2 });
    const queued = (id: string): string => JSON.stringify({ id, status: 'queued', note: id });
    for (const id of ['a', 'b', 'c', 'd']) store.set(id, queued(id), true);
    store.set('e', finished('e'));
    store.set('f', finished('f'));
    store.set('g', finished('g'));
    // a-d left the recent two whole; e left them compressed; f and g are the recent two.
    expect(store.compressed).to.equal(1);
    for (const id of ['a', 'b', 'c', 'd']) expect(store.get(id)).to.equal(queued(id));
    store.set('a', finished('a'));
    store.set('h', finished('h'));
    store.set('i', finished('i'));
    expect(store.compressed, 'e, f, g and a compressed').to.equal(4);
    expect(store.get('a')).to.equal(finished('a'));
    expect(store.delete('e')).to.equal(true);
    expect(store.delete('b')).to.equal(true);
    expect(store.compressed).to.equal(3);
    expect(store.oldest()).to.equal('c');
    expect(store.size).to.equal(7);
  });

  it('keeps a finished job with a callback in under a fifth of its text, one byte a character', () => {
    const id = randomUUID();
    const text = finished(id);
    const packed = packText(id, text);
    expect(packed.length).to.be.below(text.length / 5);
    expect([...packed].every((c) => c.charCodeAt(0) < 256)).to.equal(true);
  });
}
