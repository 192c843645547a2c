import type {
  CaptionsOption,
  JobRequested,
  StreamRequest,
  SummaryRequest,
  TranscodeRequest,
  TrimOption,
} from '../core/contracts/types.generated.ts';
import { seal, type SealingKey } from '../core/crypto/secret-box.ts';
import { MediaError } from '../core/errors.ts';
import type { AddressPolicy } from '../core/net/address-policy.ts';
import { firstUrlRefusal } from '../core/net/refuse-urls.ts';
import { backwardsTrim } from '../core/media/trim.ts';

export type JobType = 'transcode' | 'summary/gif' | 'summary/mp4' | 'stream';

/** A validated body of any job submission. */
export type JobBody = TranscodeRequest | SummaryRequest | StreamRequest;

/** A validated body with the route that took it: the route says which contract it passed. */
export type ValidRequest =
  | { type: 'transcode'; body: TranscodeRequest }
  | { type: 'summary/gif' | 'summary/mp4'; body: SummaryRequest }
  | { type: 'stream'; body: StreamRequest };

/**
 * The job-requested event for a validated request. The API key stays here (the event names the
 * organisation); bucket credentials are sealed with the current key.
 */
export function buildJobRequest(
  request: ValidRequest,
  ids: { jobId: string; orgId: string; submittedAt: string },
  sealingKey: SealingKey,
): JobRequested {
  const { body } = request;
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
  switch (request.type) {
    case 'transcode':
      return { ...common, kind: 'transcode', transcode: specOf(request.body) };
    case 'stream':
      return { ...common, kind: 'stream', stream: specOf(request.body) };
    default: {
      const summary = { format: summaryFormat[request.type], ...specOf(request.body) };
      return { ...common, kind: 'summary', summary };
    }
  }
}

/** A summary's format is its path's, not a field of the body. */
const summaryFormat = { 'summary/gif': 'gif', 'summary/mp4': 'mp4' } as const;

/**
 * What the job makes: every field of the body beside its locations, credentials and callbacks,
 * so a field added to a kind's spec schema reaches the job without an edit here.
 */
function specOf<B extends JobBody>(body: B) {
  const {
    apiKey: _apiKey,
    inputUrl: _inputUrl,
    outputUrl: _outputUrl,
    inputCreds: _inputCreds,
    outputCreds: _outputCreds,
    successUrl: _successUrl,
    failureUrl: _failureUrl,
    ...spec
  } = body;
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
    ...captionFileUrls(body),
  ];
  const refusal = firstUrlRefusal(urls, policy);
  if (refusal) throw new MediaError(refusal.code, refusal.message);
}

/** The caption files' URLs, named by their place in the body. */
function captionFileUrls(body: JobBody): [string, string][] {
  const { captions } = body as { captions?: CaptionsOption };
  return (captions?.files ?? []).map((file, i) => [`captions.files[${i}].url`, file.url]);
}

/** What is wrong with a `captions.burnIn.file` that names none of `captions.files`. */
function missingBurnIn(captions: CaptionsOption | undefined): string | undefined {
  const file = captions?.burnIn?.file;
  const count = captions?.files?.length ?? 0;
  if (file === undefined || file < count) return undefined;
  return `captions.burnIn.file (${file}) must name one of captions.files (${count === 0 ? 'none given' : `0 to ${count - 1}`})`;
}

/**
 * The cross-field rules the schemas cannot hold, every problem in one message: a trim whose end
 * is not after its start, a `captions.burnIn.file` that names no file (the worker refuses both
 * too, for jobs produced straight to Kafka).
 */
export function refuseCrossFieldProblems(body: JobBody): void {
  const problems = [
    backwardsTrim((body as { trim?: TrimOption }).trim),
    missingBurnIn((body as { captions?: CaptionsOption }).captions),
  ].filter((problem) => problem !== undefined);
  if (problems.length) throw new MediaError('invalid_request', problems.join('; '));
}

/**
 * A cross-field rule the schemas cannot hold, since its limit is configuration: an output
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
