/**
 * The one error taxonomy. Codes are stable strings; each has an HTTP status (ingress) and a
 * `retryable` flag (workers). Errors cross process boundaries as `{code, message, retryable}`.
 * The error list of docs/errors.md is checked against this table by a test.
 */
export const errorCatalog = {
  invalid_request: {
    status: 400,
    retryable: false,
    summary:
      'The body breaks field rules (or a watermark image its name or size rule); the message names each, joined by `; `.',
  },
  invalid_json: {
    status: 400,
    retryable: false,
    summary: 'The body is not parseable JSON, or not a JSON object.',
  },
  url_forbidden: {
    status: 400,
    retryable: false,
    summary: 'A URL points at a loopback, private, link-local or metadata address.',
  },
  unauthorized: {
    status: 401,
    retryable: false,
    summary: 'apiKey (or X-Api-Key on GET) is missing or unknown.',
  },
  not_found: {
    status: 404,
    retryable: false,
    summary: 'No such path, or no such job or watermark image for this organisation.',
  },
  method_not_allowed: {
    status: 405,
    retryable: false,
    summary: 'The path exists but not with this method.',
  },
  job_not_finished: {
    status: 409,
    retryable: false,
    summary: 'The job has not finished, so it has no final callback to redeliver yet.',
  },
  job_finished: {
    status: 409,
    retryable: false,
    summary:
      'The job has already ended (succeeded, failed or canceled) and no callback of it is retrying; there is nothing to cancel.',
  },
  idempotency_conflict: {
    status: 409,
    retryable: false,
    summary:
      'The Idempotency-Key was used in the last 24 h with a different request (path or body).',
  },
  idempotency_in_progress: {
    status: 409,
    retryable: true,
    summary:
      'The first request with this Idempotency-Key is still being recorded by this copy; try again in a moment.',
  },
  no_callback: {
    status: 409,
    retryable: false,
    summary: 'The job asked for no callback for its outcome; there is nothing to redeliver.',
  },
  payload_too_large: {
    status: 413,
    retryable: false,
    summary: 'The body is larger than MAX_BODY_BYTES (a watermark image: WATERMARK_MAX_BYTES).',
  },
  unsupported_media_type: {
    status: 415,
    retryable: false,
    summary:
      'The body is not sent as application/json (a watermark image: not png, jpeg or webp, or not the type it is sent as).',
  },
  rate_limited: {
    status: 429,
    retryable: true,
    summary: 'The API key sent more requests than RATE_LIMIT_PER_SECOND allows; see Retry-After.',
  },
  too_many_jobs: {
    status: 429,
    retryable: true,
    summary:
      'The organisation already has MAX_ACTIVE_JOBS_PER_ORG jobs queued or running; see Retry-After.',
  },
  bus_unavailable: {
    status: 503,
    retryable: true,
    summary: 'The event bus did not accept the job; nothing was queued and nothing will run.',
  },
  bus_uncertain: {
    status: 503,
    retryable: true,
    summary:
      'The event bus did not confirm the job in time, but it may have been queued (`jobId` in the body): retry with the same Idempotency-Key, which never makes a second job, or see GET /jobs/:id.',
  },
  internal: {
    status: 500,
    retryable: false,
    summary: 'A fault of the service; the details are in its log, not in the response.',
  },
  input_not_found: {
    status: 422,
    retryable: false,
    summary: 'The input location answered 404 (or the object does not exist).',
  },
  input_unreachable: {
    status: 502,
    retryable: true,
    summary: 'The input could not be read (network error, 5xx, time-out).',
  },
  input_rejected: {
    status: 422,
    retryable: false,
    summary:
      'The input location refused the request (4xx other than 404), or answers plain HTTP to an https:// URL.',
  },
  input_too_large: {
    status: 422,
    retryable: false,
    summary:
      'The input is larger than MAX_INPUT_BYTES, or its frame (or the output frame made from it) is larger in area than MAX_PIXELS.',
  },
  input_unsupported: {
    status: 422,
    retryable: false,
    summary:
      'The input is not a video container ffprobe accepts (allow-list) or has no video stream.',
  },
  input_corrupt: {
    status: 422,
    retryable: false,
    summary:
      'The input is truncated or damaged: it decodes for less than its header declares, or not at all.',
  },
  input_too_short: {
    status: 422,
    retryable: false,
    summary:
      'The requested trim lies outside the input (it starts at or past its end, or ends after it), or ends before it starts.',
  },
  input_caption_invalid: {
    status: 422,
    retryable: false,
    summary:
      'A caption file (`captions.files[i]`, named by index and label) is not SubRip or WebVTT in UTF-8, is empty or has a broken cue; or `captions.burnIn` names a track that does not exist (an input text subtitle stream or a file).',
  },
  watermark_unavailable: {
    status: 422,
    retryable: false,
    summary: 'The watermark image could not be fetched or is not png, jpeg or webp.',
  },
  option_unsupported: {
    status: 422,
    retryable: false,
    summary: 'The requested combination cannot be produced by this build.',
  },
  transcode_failed: { status: 500, retryable: false, summary: 'ffmpeg failed on this input.' },
  memory_limit_exceeded: {
    status: 422,
    retryable: false,
    summary: 'ffmpeg or ffprobe needed more memory than FFMPEG_MEMORY_LIMIT_BYTES for this job.',
  },
  job_timeout: {
    status: 504,
    retryable: true,
    summary: 'The job ran longer than JOB_TIMEOUT_MS or ffmpeg stalled for STALL_TIMEOUT_MS.',
  },
  output_invalid: {
    status: 500,
    retryable: false,
    summary: 'The produced file failed verification with ffprobe.',
  },
  output_rejected: {
    status: 422,
    retryable: false,
    summary:
      'The output location refused the upload (4xx), or answers plain HTTP to an https:// URL.',
  },
  output_unreachable: {
    status: 502,
    retryable: true,
    summary: 'The upload failed (network error, 5xx, time-out).',
  },
  invalid_event: {
    status: 422,
    retryable: false,
    summary:
      'A job produced straight to Kafka was refused (a field rule, an unknown organisation, a refused URL, credentials that do not open); the message names the field.',
  },
  interrupted: {
    status: 503,
    retryable: true,
    summary: 'The worker was stopped during the job; it is handed back and runs again.',
  },
  canceled: {
    status: 409,
    retryable: false,
    summary: 'The job was canceled by its organisation (POST /jobs/:id/cancel).',
  },
} as const satisfies Record<string, { status: number; retryable: boolean; summary: string }>;

export type ErrorCode = keyof typeof errorCatalog;

/** An error whose message may be shown to the caller. */
export class MediaError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly status: number;
  /** The job the error is about, answered beside the message (bus_uncertain). */
  readonly jobId: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options?: { cause?: unknown; retryable?: boolean; jobId?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MediaError';
    this.code = code;
    this.jobId = options?.jobId;
    this.status = errorCatalog[code].status;
    this.retryable = options?.retryable ?? errorCatalog[code].retryable;
  }
}

/** Errors as data, for events and callbacks. */
export interface ErrorData {
  code: ErrorCode;
  message: string;
  retryable: boolean;
}

/** Anything thrown, as data; messages of unknown errors are not exposed. */
export function toErrorData(error: unknown): ErrorData {
  if (error instanceof MediaError)
    return { code: error.code, message: error.message, retryable: error.retryable };
  return { code: 'internal', message: 'internal error', retryable: false };
}
