import { randomUUID } from 'node:crypto';
import { topics, type EventBus } from '../../services/core/bus/event-bus.ts';
import type { JobRequested, JobResult } from '../../services/core/contracts/types.generated.ts';
import type { EventCodec, JobEvent } from '../../services/core/events/event-codec.ts';

/** The transcode most tests ask for: h264 in MP4 at the contract's lowest bitrate. */
export const H264_MP4 = { encoder: 'h264', container: 'mp4', bitrateKbps: '1000' } as const;

/** A server of `startTestServer` (or anything else with its `/files/` and `/callbacks/` routes). */
interface Served {
  url: string;
}

/**
 * The body of `POST /transcode` reading `input` from the file server and writing `output` to it,
 * as {@link H264_MP4}; `more` adds fields or replaces them (apiKey, width, callbacks, …).
 */
export function transcodeBody(
  files: Served,
  input: string,
  output: string,
  more: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    inputUrl: `${files.url}/files/${input}`,
    outputUrl: `${files.url}/files/${output}`,
    ...H264_MP4,
    ...more,
  };
}

/**
 * A `media.job.requested` event as the ingress publishes it: a new job id, attempt 1 of
 * organisation `o`, submitted now, reading `input` from the file server and writing `output` to
 * it; `more` holds the kind's spec (`summary`, `stream`) and replaces fields (jobId, orgId, …).
 */
export function jobRequested(
  kind: JobRequested['kind'],
  files: Served,
  input: string,
  output: string,
  more: Partial<JobRequested> = {},
): JobRequested {
  return {
    jobId: randomUUID(),
    kind,
    orgId: 'o',
    attempt: 1,
    submittedAt: new Date().toISOString(),
    input: { url: `${files.url}/files/${input}` },
    output: { url: `${files.url}/files/${output}` },
    ...more,
  };
}

/** The `media.job.requested` event of a {@link transcodeBody} job: {@link H264_MP4} unless `more` says. */
export function transcodeRequested(
  files: Served,
  input: string,
  output: string,
  more: Partial<JobRequested> = {},
): JobRequested {
  return jobRequested('transcode', files, input, output, { transcode: { ...H264_MP4 }, ...more });
}

/** Both callbacks to the file server's recorder: `/callbacks/ok` and `/callbacks/fail`. */
export function fileCallbacks(files: Served): { successUrl: string; failureUrl: string } {
  return { successUrl: `${files.url}/callbacks/ok`, failureUrl: `${files.url}/callbacks/fail` };
}

/** POSTs `body` as JSON; answers the status and the JSON reply. */
export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** `GET /jobs/:id` of the service at `base`, with `key`. */
export async function jobStatus(
  base: string,
  key: string,
  id: string,
): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}/jobs/${id}`, { headers: { 'x-api-key': key } });
  return (await res.json()) as Record<string, unknown>;
}

/** Polls the job until its progress passes 5 % (ffmpeg is at work on it); fails after `timeoutMs`. */
export async function waitForProgress(
  base: string,
  key: string,
  id: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (Number((await jobStatus(base, key, id))['progressPercent'] ?? 0) > 5) return;
    if (Date.now() > deadline) throw new Error('the job never made progress');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Subscribes an `observer` group to the job events topic from its start and collects every event
 * that decodes into `into` (a new list unless given), which it returns.
 */
export async function observeJobEvents(
  bus: EventBus,
  codec: EventCodec,
  into: JobEvent[] = [],
): Promise<JobEvent[]> {
  await bus.subscribe({
    group: 'observer',
    topics: [topics.jobEvents],
    fromBeginning: true,
    handler: async (r) => {
      const d = codec.decode(r);
      if (d.ok) into.push(d.event);
    },
  });
  return into;
}

/** A job's result as a handler returns it: a 10 s 640×360 MP4 at `outputUrl`; `more` replaces fields. */
export function jobResult(outputUrl: string, more: Partial<JobResult> = {}): JobResult {
  return {
    outputUrl,
    format: 'mp4',
    width: 640,
    height: 360,
    durationSeconds: 10,
    sizeBytes: 1_250_000,
    ...more,
  };
}
