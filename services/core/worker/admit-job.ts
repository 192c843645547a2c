import type { Contracts } from '../contracts/load-contracts.ts';
import type { JobRequested, SealedSecret } from '../contracts/types.generated.ts';
import { open, type SealingKey } from '../crypto/secret-box.ts';
import type { AddressPolicy } from '../net/address-policy.ts';
import { firstUrlRefusal } from '../net/refuse-urls.ts';
import type { DeadLetterReason } from './dead-letter.ts';

/**
 * What a job request must pass on consume, whoever produced it: the ingress's own rules, so a
 * job produced straight to Kafka cannot ask for what the HTTP API refuses.
 */
export interface AdmissionRules {
  /** The policy the ingress applies to caller URLs (ALLOW_PRIVATE_NETWORKS, ADDRESS_ALLOW_LIST). */
  addressPolicy: AddressPolicy;
  /** Organisations a job may name (KNOWN_ORGS); undefined: any organisation is accepted. */
  knownOrgs?: ReadonlySet<string> | undefined;
  /** The HTTP request contracts: a job is checked as the request that would have made it. */
  contracts: Pick<Contracts, 'transcodeRequest' | 'summaryRequest' | 'streamRequest'>;
}

/** Why a job request is refused: the dead-letter reason, and a message that names the field. */
export interface Refusal {
  reason: DeadLetterReason;
  message: string;
}

/** The job's URLs, named by their place in the event's data. */
export function jobUrls(job: JobRequested): [string, string | undefined][] {
  const spec = job.kind === 'transcode' ? job.transcode : (job.stream ?? job.summary);
  const watermark =
    spec?.watermark && 'imageUrl' in spec.watermark ? spec.watermark.imageUrl : undefined;
  return [
    ['data.input.url', job.input.url],
    ['data.output.url', job.output.url],
    ['data.callbacks.successUrl', job.callbacks?.successUrl],
    ['data.callbacks.failureUrl', job.callbacks?.failureUrl],
    [`data.${job.kind}.watermark.imageUrl`, watermark],
    ...(spec && 'captions' in spec ? (spec.captions?.files ?? []) : []).map(
      (file, i): [string, string] => [`data.${job.kind}.captions.files[${i}].url`, file.url],
    ),
  ];
}

/** The first rule `job` breaks, or undefined when it may run. */
export function admissionRefusal(
  job: JobRequested,
  rules: AdmissionRules,
  sealingKeys: readonly SealingKey[],
): Refusal | undefined {
  if (rules.knownOrgs && !rules.knownOrgs.has(job.orgId))
    return {
      reason: 'unknown_org',
      message: `data.orgId "${job.orgId}" is not an organisation of this service`,
    };
  const url = firstUrlRefusal(jobUrls(job), rules.addressPolicy);
  if (url)
    return {
      reason: url.code === 'url_forbidden' ? 'url_forbidden' : 'invalid_event',
      message: url.message,
    };
  const opened: Record<'input' | 'output', unknown> = { input: undefined, output: undefined };
  for (const side of ['input', 'output'] as const) {
    const sealed: SealedSecret | undefined = job[side].creds;
    if (!sealed) continue;
    try {
      opened[side] = open(sealed, sealingKeys, job.jobId);
    } catch {
      // The cause stays unsaid: which key failed, and how, is no business of the producer's log.
      return {
        reason: 'secret_unreadable',
        message: `data.${side}.creds cannot be opened with the sealing keys (keyId "${sealed.keyId}") and this job id`,
      };
    }
  }
  return httpRuleRefusal(job, opened.input, opened.output, rules.contracts);
}

/** The job checked as the HTTP request that would have made it, with its credentials opened. */
function httpRuleRefusal(
  job: JobRequested,
  inputCreds: unknown,
  outputCreds: unknown,
  contracts: AdmissionRules['contracts'],
): Refusal | undefined {
  const optional = (name: string, value: unknown): Record<string, unknown> =>
    value === undefined ? {} : { [name]: value };
  const common = {
    apiKey: 'not-checked-here',
    inputUrl: job.input.url,
    outputUrl: job.output.url,
    ...optional('inputCreds', inputCreds),
    ...optional('outputCreds', outputCreds),
    ...optional('successUrl', job.callbacks?.successUrl),
    ...optional('failureUrl', job.callbacks?.failureUrl),
  };
  const check =
    job.kind === 'transcode' && job.transcode
      ? contracts.transcodeRequest({ ...common, ...job.transcode })
      : job.kind === 'stream' && job.stream
        ? contracts.streamRequest({ ...common, ...job.stream })
        : contracts.summaryRequest({ ...common, ...omitFormat(job.summary) });
  if (check.ok) return undefined;
  return { reason: 'invalid_event', message: inDataTerms(check.message, job.kind) };
}

function omitFormat(summary: JobRequested['summary']): Record<string, unknown> {
  const { format: _format, ...rest } = summary ?? { format: 'mp4' };
  return rest;
}

/** Renames the HTTP body's fields in a message to where they are in the event's data. */
function inDataTerms(message: string, kind: JobRequested['kind']): string {
  const place: Record<string, string> = {
    inputUrl: 'data.input.url',
    outputUrl: 'data.output.url',
    inputCreds: 'data.input.creds',
    outputCreds: 'data.output.creds',
    successUrl: 'data.callbacks.successUrl',
    failureUrl: 'data.callbacks.failureUrl',
  };
  const spec =
    /^(watermark|width|height|encoder|container|bitrateKbps|removeAudio|formats|ladder|segmentSeconds|thumbnails|captions)$/;
  return message.replace(
    /(?<![\w.])[A-Za-z]+\b/g,
    (name: string) => place[name] ?? (spec.test(name) ? `data.${kind}.${name}` : name),
  );
}

/** Who a refused job request belongs to, read leniently from data that may break its schema. */
export interface JobOwner {
  jobId: string;
  orgId: string;
  kind: JobRequested['kind'];
  attempt: number;
  /** Only a URL the address policy lets the service call. */
  failureUrl?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// schemas/common/org-id.v1.schema.json and schemas/common/url.v1.schema.json#/$defs/httpUrl.
const ORG_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;
const HTTP_URL = /^https?:\/\/[^\s/?#@]+(\/[^\s]*)?$/;

/** The owner of a refused request, when its data names a job id and an organisation. */
export function readJobOwner(
  data: unknown,
  fallbackKind: JobRequested['kind'],
  policy: AddressPolicy,
): JobOwner | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const d = data as Record<string, unknown>;
  const { jobId, orgId, kind, attempt } = d;
  if (
    typeof jobId !== 'string' ||
    !UUID.test(jobId) ||
    typeof orgId !== 'string' ||
    !ORG_ID.test(orgId)
  )
    return undefined;
  const callbacks =
    typeof d['callbacks'] === 'object' && d['callbacks'] !== null
      ? (d['callbacks'] as Record<string, unknown>)
      : {};
  const failureUrl = callbacks['failureUrl'];
  const callable =
    typeof failureUrl === 'string' &&
    failureUrl.length <= 2048 &&
    HTTP_URL.test(failureUrl) &&
    !firstUrlRefusal([['failureUrl', failureUrl]], policy);
  return {
    jobId,
    orgId,
    kind: kind === 'transcode' || kind === 'summary' || kind === 'stream' ? kind : fallbackKind,
    attempt:
      typeof attempt === 'number' && Number.isInteger(attempt) && attempt >= 1 && attempt <= 100
        ? attempt
        : 1,
    ...(callable ? { failureUrl } : {}),
  };
}
