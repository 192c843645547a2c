import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { EventBus } from '../../../services/core/bus/event-bus.ts';
import type { EventCodec, JobEvent } from '../../../services/core/events/event-codec.ts';
import type { JobRequested } from '../../../services/core/contracts/types.generated.ts';
import { callbackFor } from '../../../services/core/callbacks/callback-request.ts';
import { createJobStatusView } from '../../../services/core/status/job-status-view.ts';
import { RECENT_TEXTS } from '../../../services/core/status/job-status-store.ts';
import { jobResult } from '../../support/job-requests.ts';

// The view's apply needs neither bus nor codec; start() is not called here.
const view = () =>
  createJobStatusView({ bus: {} as EventBus, codec: {} as EventCodec }, { maxJobs: 100 });

const request = (
  jobId: string,
  orgId: string,
  extra: Partial<JobRequested> = {},
): JobRequested => ({
  jobId,
  kind: 'transcode',
  orgId,
  attempt: 1,
  submittedAt: '2026-11-23T10:00:00.000Z',
  input: { url: 'https://example.com/in.mp4' },
  output: { url: 'https://example.com/out.mp4' },
  ...extra,
});

const processing = (jobId: string, orgId: string, attempt: number): JobEvent => ({
  specversion: '1.0',
  id: `${jobId}:p:${attempt}`,
  source: 'test',
  time: '2026-11-23T10:00:05.000Z',
  type: 'media.job.processing',
  data: { jobId, kind: 'transcode', orgId, attempt, startedAt: '2026-11-23T10:00:05.000Z' },
});

describe('job status view: queued jobs', () => {
  it('says since when a queued job waits: its submission, then the due time of a retry', () => {
    const v = view();
    v.applyRequested(request('j1', 'org-a'), '2026-11-23T10:00:00.100Z');
    expect(v.get('j1', 'org-a')?.queuedSince).to.equal('2026-11-23T10:00:00.000Z');
    v.apply(processing('j1', 'org-a', 1));
    expect(v.get('j1', 'org-a')).to.not.have.property('queuedSince');
    v.applyRequested(
      request('j1', 'org-a', { attempt: 2, notBefore: '2026-11-23T10:01:00.000Z' }),
      '2026-11-23T10:00:30.000Z',
    );
    expect(v.get('j1', 'org-a')).to.include({
      status: 'queued',
      queuedSince: '2026-11-23T10:01:00.000Z',
    });
  });

  it('a scheduled retry makes the job queued with its next attempt and the last error, until it succeeds', () => {
    const v = view();
    v.applyRequested(request('j9', 'org-a'), '2026-11-23T10:00:00.100Z');
    v.apply(processing('j9', 'org-a', 1));
    v.apply({
      specversion: '1.0',
      id: 'j9:media.job.retry-scheduled:2',
      source: 'test',
      time: '2026-11-23T10:00:06.000Z',
      type: 'media.job.retry-scheduled',
      data: {
        jobId: 'j9',
        kind: 'transcode',
        orgId: 'org-a',
        attempt: 2,
        notBefore: '2026-11-23T10:00:20.000Z',
        error: { code: 'input_unreachable', message: 'down', retryable: true },
      },
    });
    expect(v.get('j9', 'org-a')).to.deep.include({
      status: 'queued',
      attempt: 2,
      queuedSince: '2026-11-23T10:00:20.000Z',
      error: { code: 'input_unreachable', message: 'down' },
    });
    // A late processing event of the failed attempt changes nothing.
    v.apply(processing('j9', 'org-a', 1));
    expect(v.get('j9', 'org-a')?.status).to.equal('queued');
    v.apply(processing('j9', 'org-a', 2));
    expect(v.get('j9', 'org-a')).to.include({ status: 'processing', attempt: 2 });
    v.apply({
      specversion: '1.0',
      id: 'j9:media.job.succeeded:2',
      source: 'test',
      time: '2026-11-23T10:00:30.000Z',
      type: 'media.job.succeeded',
      data: {
        jobId: 'j9',
        kind: 'transcode',
        orgId: 'org-a',
        attempt: 2,
        finishedAt: '2026-11-23T10:00:30.000Z',
        result: jobResult('https://media.example.com/out/j9.mp4', { videoCodec: 'h264' }),
      },
    });
    expect(v.get('j9', 'org-a')?.status).to.equal('succeeded');
    expect(v.get('j9', 'org-a')).not.to.have.property('error');
  });

  it('counts queued jobs per organisation and kind', () => {
    const v = view();
    v.applyRequested(request('j1', 'org-a'), '2026-11-23T10:00:00Z');
    v.applyRequested(request('j2', 'org-a'), '2026-11-23T10:00:00Z');
    v.applyRequested(request('j3', 'org-b'), '2026-11-23T10:00:00Z');
    v.apply(processing('j2', 'org-a', 1));
    const counts = [...v.waiting().values()].map((c) => `${c.orgId}/${c.kind}=${c.count}`);
    expect(counts.sort()).to.deep.equal(['org-a/transcode=1', 'org-b/transcode=1']);
  });
});

const event = (type: JobEvent['type'], data: object, time = '2026-11-23T10:00:10.000Z') =>
  ({ specversion: '1.0', id: `${type}:${time}`, source: 'test', time, type, data }) as JobEvent;

const failed = (jobId: string, orgId: string, code: string): JobEvent =>
  event('media.job.failed', {
    jobId,
    kind: 'transcode',
    orgId,
    attempt: 1,
    finishedAt: '2026-11-23T10:00:10.000Z',
    error: { code, message: code, retryable: false },
  });

describe('job status view: active jobs, cancels and submissions', () => {
  it('counts active jobs per organisation on every change, and forgets an evicted one', () => {
    const v = createJobStatusView({ bus: {} as EventBus, codec: {} as EventCodec }, { maxJobs: 3 });
    v.applyRequested(request('j1', 'org-a'), '2026-11-23T10:00:00Z');
    v.applyRequested(request('j2', 'org-a'), '2026-11-23T10:00:00Z');
    v.applyRequested(request('j3', 'org-b'), '2026-11-23T10:00:00Z');
    v.apply(processing('j2', 'org-a', 1));
    expect([v.activeJobs('org-a'), v.activeJobs('org-b')]).to.deep.equal([2, 1]);
    v.apply(failed('j2', 'org-a', 'input_not_found'));
    expect(v.activeJobs('org-a')).to.equal(1);
    // Another organisation's record naming the job changes nothing.
    v.apply(failed('j1', 'org-b', 'canceled'));
    expect(v.activeJobs('org-a')).to.equal(1);
    // A fourth job evicts the least recently changed one (j1, still queued).
    v.applyRequested(request('j4', 'org-b'), '2026-11-23T10:00:00Z');
    expect(v.get('j1', 'org-a')).to.equal(undefined);
    expect([v.activeJobs('org-a'), v.activeJobs('org-b')]).to.deep.equal([0, 2]);
    expect([...v.waiting().values()]).to.deep.equal([
      { orgId: 'org-b', kind: 'transcode', count: 2 },
    ]);
  });

  it('a cancel read before its request makes the entry; the request then completes it; a canceled end is not active', () => {
    const v = view();
    v.apply(
      event('media.job.cancel-requested', {
        jobId: 'j1',
        kind: 'transcode',
        orgId: 'org-a',
        requestedAt: '2026-11-23T10:00:03.000Z',
      }),
    );
    expect(v.get('j1', 'org-a')).to.include({
      status: 'queued',
      cancelRequestedAt: '2026-11-23T10:00:03.000Z',
    });
    expect(v.submission('j1', 'org-a')).to.include({ requestSeen: false });
    v.applyRequested(
      request('j1', 'org-a', { requestDigest: 'd'.repeat(64) }),
      '2026-11-23T10:00:04Z',
    );
    expect(v.submission('j1', 'org-a')).to.deep.equal({
      createdAt: '2026-11-23T10:00:00.000Z',
      status: 'queued',
      requestSeen: true,
      requestDigest: 'd'.repeat(64),
    });
    expect(v.get('j1', 'org-a')).to.not.have.any.keys('submittedAt', 'requestDigest', 'rev');
    expect(v.get('j1', 'org-a')?.cancelRequestedAt).to.equal('2026-11-23T10:00:03.000Z');
    expect(v.activeJobs('org-a')).to.equal(1);
    v.apply(failed('j1', 'org-a', 'canceled'));
    expect(v.get('j1', 'org-a')).to.include({ status: 'canceled' });
    expect(v.activeJobs('org-a')).to.equal(0);
    expect(v.submission('j1', 'org-b')).to.equal(undefined);
  });
});

describe('job status view: the texts it keeps', () => {
  it('gives back every field of a finished job that names its id many times, and only its own id', () => {
    const id = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const other = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
    const callbacks = { successUrl: `https://hooks.example.com/${id}?again=${id}` };
    const result = jobResult(`https://media.example.com/out/${id}.mp4`, { videoCodec: 'h264' });
    const succeeded: JobEvent = {
      ...event('media.job.succeeded', {
        jobId: id,
        kind: 'transcode',
        orgId: 'org-a',
        attempt: 1,
        finishedAt: '2026-11-23T10:00:10.000Z',
        callbacks,
        result,
      }),
      id: `${id}:media.job.succeeded:1`,
    };
    const v = view();
    v.applyRequested(request(id, 'org-a', { callbacks }), '2026-11-23T10:00:00Z');
    v.applyRequested(request(other, 'org-a', { callbacks }), '2026-11-23T10:00:00Z');
    v.apply(succeeded);
    expect(v.get(id, 'org-a')).to.deep.include({ id, status: 'succeeded', result });
    expect(v.get(id, 'org-a')?.callback?.webhookId).to.include(id);
    expect(v.finalCallback(id, 'org-a')).to.deep.equal(callbackFor(succeeded));
    expect(v.get(other, 'org-a')).to.include({ id: other, status: 'queued' });
    expect(JSON.stringify([v.get(id, 'org-a'), v.finalCallback(id, 'org-a')])).to.not.include(
      '\\u0001',
    );
  });
});

describe('job status view: jobs kept compressed', () => {
  it('reads back and changes jobs beyond the newest uncompressed ones, and still forgets the least recently changed', () => {
    const v = createJobStatusView(
      { bus: {} as EventBus, codec: {} as EventCodec },
      { maxJobs: RECENT_TEXTS + 244 },
    );
    const ids = Array.from({ length: RECENT_TEXTS + 344 }, () => randomUUID());
    for (const id of ids) v.applyRequested(request(id, 'org-a'), '2026-11-23T10:00:00Z');
    // The first 100 were forgotten; the next ones are compressed, the newest RECENT_TEXTS not.
    expect(v.get(ids[99] ?? '', 'org-a')).to.equal(undefined);
    expect(v.activeJobs('org-a')).to.equal(RECENT_TEXTS + 244);
    const [oldest, older] = [ids[100] ?? '', ids[150] ?? ''];
    const result = jobResult(`https://media.example.com/out/${older}.mp4`);
    const succeeded: JobEvent = {
      ...event('media.job.succeeded', {
        jobId: older,
        kind: 'transcode',
        orgId: 'org-a',
        attempt: 1,
        finishedAt: '2026-11-23T10:00:10.000Z',
        callbacks: { successUrl: 'https://hooks.example.com/done' },
        result,
      }),
      id: `${older}:media.job.succeeded:1`,
    };
    expect(v.get(older, 'org-a')).to.include({ id: older, status: 'queued' });
    v.apply(succeeded);
    expect(v.activeJobs('org-a')).to.equal(RECENT_TEXTS + 243);
    // A new job forgets the least recently changed one: the oldest, not the one just finished.
    v.applyRequested(request(randomUUID(), 'org-a'), '2026-11-23T10:00:00Z');
    expect(v.get(oldest, 'org-a')).to.equal(undefined);
    expect(v.get(ids[101] ?? '', 'org-a')).to.deep.include({
      id: ids[101],
      status: 'queued',
      queuedSince: '2026-11-23T10:00:00.000Z',
    });
    expect(v.get(older, 'org-a')).to.deep.include({ id: older, status: 'succeeded', result });
    expect(v.finalCallback(older, 'org-a')).to.deep.equal(callbackFor(succeeded));
    expect(v.activeJobs('org-a')).to.equal(RECENT_TEXTS + 243);
    // Enough changes later the finished job is compressed too, and reads back the same.
    for (let i = 0; i < RECENT_TEXTS; i++) v.apply(processing(ids[200 + i] ?? '', 'org-a', 1));
    expect(v.get(older, 'org-a')).to.deep.include({ id: older, status: 'succeeded', result });
  });
});
