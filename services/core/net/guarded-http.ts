import http from 'node:http';
import https from 'node:https';
import { lookup as dnsLookup } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import { createAddressPolicy, type AddressPolicyOptions } from './address-policy.ts';

export class ForbiddenUrlError extends Error {
  override name = 'ForbiddenUrlError';
}

export interface GuardedRequest {
  method: 'GET' | 'PUT' | 'POST' | 'HEAD' | 'DELETE';
  headers?: Record<string, string>;
  body?: Buffer | Readable;
  signal?: AbortSignal;
  /** Time allowed without any socket activity (default 30 s). */
  idleTimeoutMs?: number;
  /** Redirects followed for GET and HEAD, each checked again (default 3; never for PUT/POST). */
  maxRedirects?: number;
}

/** Name → every address it has (the system resolver unless a test passes one). */
export type Resolver = (
  hostname: string,
  callback: (error: Error | null, addresses: { address: string; family: number }[]) => void,
) => void;

const systemResolver: Resolver = (hostname, callback) =>
  dnsLookup(hostname, { all: true }, (error, addresses) => callback(error, addresses ?? []));

export interface HttpClient {
  /** Sends a request to a caller-given URL; the response body is left for the caller to read. */
  request(url: string, options: GuardedRequest): Promise<http.IncomingMessage>;
}

/**
 * HTTP(S) for caller-given URLs. Every address a name resolves to is checked against the
 * address policy at connect time (so a DNS answer cannot change between check and use), at
 * every redirect hop.
 */
export function createGuardedHttp(
  options: AddressPolicyOptions & { resolve?: Resolver },
): HttpClient {
  const resolve = options.resolve ?? systemResolver;
  const policy = createAddressPolicy(options);
  const lookup: LookupFunction = (hostname, opts, callback) => {
    resolve(hostname, (error, list) => {
      if (error) return callback(error, '', 4);
      const bad = list.find((a) => policy.refusal(a.address) !== undefined);
      if (bad)
        return callback(
          new ForbiddenUrlError(
            `${hostname} resolves to ${policy.refusal(bad.address) ?? 'a forbidden address'}`,
          ),
          '',
          4,
        );
      if (opts.all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(new Error(`${hostname} has no address`), '', 4);
      callback(null, first.address, first.family);
    });
  };

  const checkUrl = (url: URL): void => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new ForbiddenUrlError(`${url.protocol} URLs are not fetched`);
    if (url.username || url.password)
      throw new ForbiddenUrlError('URLs with user info are not fetched');
    const refusal = policy.hostRefusal(url.hostname);
    if (refusal) throw new ForbiddenUrlError(`${url.hostname} is ${refusal}`);
  };

  const once = (url: URL, req: GuardedRequest): Promise<http.IncomingMessage> =>
    new Promise((resolve, reject) => {
      checkUrl(url);
      const mod = url.protocol === 'https:' ? https : http;
      const clientRequest = mod.request(
        url,
        { method: req.method, headers: req.headers, lookup, signal: req.signal, agent: false },
        resolve,
      );
      clientRequest.setTimeout(req.idleTimeoutMs ?? 30_000, () =>
        clientRequest.destroy(new Error(`no answer from ${url.host} in time`)),
      );
      clientRequest.on('error', reject);
      if (!req.body) clientRequest.end();
      else if (Buffer.isBuffer(req.body)) clientRequest.end(req.body);
      // pipeline, not pipe: a body that fails (an aborted upload) must settle the request, not
      // emit an 'error' nobody listens to, which would end the process.
      else pipeline(req.body, clientRequest, (error) => error && reject(error));
    });

  return {
    async request(rawUrl, req) {
      let url = new URL(rawUrl);
      const follows = req.method === 'GET' || req.method === 'HEAD' ? (req.maxRedirects ?? 3) : 0;
      for (let hop = 0; ; hop++) {
        const res = await once(url, req);
        const location = res.headers.location;
        if (
          !location ||
          !res.statusCode ||
          res.statusCode < 300 ||
          res.statusCode >= 400 ||
          hop >= follows
        )
          return res;
        res.resume();
        url = new URL(location, url);
      }
    },
  };
}
