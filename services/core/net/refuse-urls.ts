import type { AddressPolicy } from './address-policy.ts';

/** Why one of a job's URLs may not be used: the field it is in, and a sentence naming it. */
export interface UrlRefusal {
  field: string;
  /** `invalid_request` when the URL does not parse; `url_forbidden` when the policy refuses its host. */
  code: 'invalid_request' | 'url_forbidden';
  message: string;
}

/**
 * The first http(s) URL, among `[field, url]` pairs, whose host the address policy refuses by
 * its literal form (a name of this machine, a private or metadata address). Names that resolve
 * there are caught again when the worker connects. Bucket URLs name no host to check.
 */
export function firstUrlRefusal(
  urls: readonly (readonly [string, string | undefined])[],
  policy: AddressPolicy,
): UrlRefusal | undefined {
  for (const [field, value] of urls) {
    if (!value || !/^https?:\/\//.test(value)) continue;
    let host: string;
    try {
      host = new URL(value).hostname;
    } catch {
      return { field, code: 'invalid_request', message: `${field} is not a valid URL` };
    }
    const refusal = policy.hostRefusal(host);
    if (refusal)
      return {
        field,
        code: 'url_forbidden',
        message: `${field} points at ${refusal}, which this service does not reach`,
      };
  }
  return undefined;
}
