import type {
  JobRequested,
  StreamRequest,
  SummaryRequest,
  TranscodeRequest,
} from '../core/contracts/types.generated.ts';
import { seal, type SealingKey } from '../core/crypto/secret-box.ts';
import { MediaError } from '../core/errors.ts';
import type { AddressPolicy } from '../core/net/address-policy.ts';
import { firstUrlRefusal } from '../core/net/refuse-urls.ts';

export type JobType = 'transcode' | 'summary/gif' | 'summary/mp4' | 'stream';

/** A validated body of any job submission. */
export type JobBody = TranscodeRequest | SummaryRequest | StreamRequest;

/**
 * The job-requested event for a validated request. The API key stays here (the event names the
 * organisation); bucket credentials are sealed with the current key.
 */
export function buildJobRequest(
  type: JobType,
  body: JobBody,
  ids: { jobId: string; orgId: string; submittedAt: string },
  sealingKey: SealingKey,
): JobRequested {
  const location = (url: string, creds: unknown): JobRequested['input'] =>
    creds === undefined ? { url } : { url, creds: seal(creds, sealingKey, ids.jobId) };
  const callbacks = {
    ...(body.successUrl ? { successUrl: body.successUrl } : {}),
    ...(body.failureUrl ? { failureUrl: body.failureUrl } : {}),
  };
  const common = {
    jobId: ids.jobId,
    orgId: ids.orgId,
    attempt: 1,
    submittedAt: ids.submittedAt,
    input: location(body.inputUrl, body.inputCreds),
    output: location(body.outputUrl, body.outputCreds),
    ...(Object.keys(callbacks).length ? { callbacks } : {}),
  };
  const watermark = body.watermark ? { watermark: body.watermark } : {};
  if (type === 'stream') return { ...common, kind: 'stream', stream: streamSpecOf(body) };
  const { width: w } = body as TranscodeRequest | SummaryRequest;
  const width = w === undefined ? {} : { width: w };
  if (type === 'transcode') {
    const t = body as TranscodeRequest;
    const height = t.height === undefined ? {} : { height: t.height };
    return {
      ...common,
      kind: 'transcode',
      transcode: {
        encoder: t.encoder,
        container: t.container,
        bitrateKbps: t.bitrateKbps,
        ...width,
        ...height,
        ...watermark,
        ...(t.quality ? { quality: t.quality } : {}),
      },
    };
  }
  const s = body as SummaryRequest;
  const removeAudio = s.removeAudio === undefined ? {} : { removeAudio: s.removeAudio };
  return {
    ...common,
    kind: 'summary',
    summary: {
      format: type === 'summary/gif' ? 'gif' : 'mp4',
      ...width,
      ...removeAudio,
      ...watermark,
      ...(s.quality ? { quality: s.quality } : {}),
    },
  };
}

/** The stream options of a POST /streams body: its fields beside the locations and callbacks. */
function streamSpecOf(body: JobBody): NonNullable<JobRequested['stream']> {
  const {
    apiKey: _apiKey,
    inputUrl: _inputUrl,
    outputUrl: _outputUrl,
    inputCreds: _inputCreds,
    outputCreds: _outputCreds,
    successUrl: _successUrl,
    failureUrl: _failureUrl,
    ...spec
  } = body as StreamRequest;
  return spec;
}

/**
 * Early refusal of URLs that name this machine or a private network literally. Names that
 * resolve there are caught again when the worker connects.
 */
export function refuseLocalUrls(body: JobBody, policy: AddressPolicy): void {
  const urls: [string, string | undefined][] = [
    ['inputUrl', body.inputUrl],
    ['outputUrl', body.outputUrl],
    ['successUrl', body.successUrl],
    ['failureUrl', body.failureUrl],
    [
      'watermark.imageUrl',
      body.watermark && 'imageUrl' in body.watermark ? body.watermark.imageUrl : undefined,
    ],
  ];
  const refusal = firstUrlRefusal(urls, policy);
  if (refusal) throw new MediaError(refusal.code, refusal.message);
}

/**
 * The one cross-field rule the schemas cannot hold, since its limit is configuration: an output
 * whose requested width × height is over the pixel budget. (A single side is checked by the
 * worker, once the input's aspect ratio is known.)
 */
export function refuseOverPixelBudget(body: JobBody, maxPixels: number): void {
  const { width, height } = body as Partial<TranscodeRequest>;
  if (typeof width !== 'number' || typeof height !== 'number' || width * height <= maxPixels)
    return;
  throw new MediaError(
    'invalid_request',
    `width × height (${width}×${height} = ${width * height} pixels) must be at most ${maxPixels} pixels`,
  );
}
