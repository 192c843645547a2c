import { createHmac } from 'node:crypto';

/**
 * The Standard Webhooks signature header value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
 * keyed with the base64-decoded part of the `whsec_` secret.
 */
export function signWebhook(
  secret: string,
  webhookId: string,
  timestampSeconds: number,
  body: string,
): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key)
    .update(`${webhookId}.${timestampSeconds}.${body}`)
    .digest('base64');
  return `v1,${mac}`;
}

/** The headers of one attempt; without a secret the callback is sent unsigned. */
export function webhookHeaders(options: {
  webhookId: string;
  attempt: number;
  body: string;
  secret: string | undefined;
  now: Date;
}): Record<string, string> {
  const timestamp = Math.floor(options.now.getTime() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'media-service-notifier/2',
    'webhook-id': options.webhookId,
    'webhook-timestamp': String(timestamp),
    // Not part of Standard Webhooks: lets a receiver see retries without keeping state.
    'x-media-delivery-attempt': String(options.attempt),
  };
  if (options.secret)
    headers['webhook-signature'] = signWebhook(
      options.secret,
      options.webhookId,
      timestamp,
      options.body,
    );
  return headers;
}
