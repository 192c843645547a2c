import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedAttempt {
  webhookId: string;
  attempt: number;
  headers: Record<string, string>;
  raw: string;
  answered: number | 'held';
}

/**
 * A callback receiver whose answer a test decides per request (a status, or 'hold': never
 * answer), that can be taken down (connection refused) and brought back on the same port.
 */
export interface CallbackReceiver {
  url: string;
  received: ReceivedAttempt[];
  answer: (attempt: ReceivedAttempt) => number | 'hold';
  down(): Promise<void>;
  up(): Promise<void>;
  waitFor(predicate: (a: ReceivedAttempt) => boolean, timeoutMs: number): Promise<ReceivedAttempt>;
}

export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const received: ReceivedAttempt[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, String(v)]),
      );
      const attempt: ReceivedAttempt = {
        webhookId: headers['webhook-id'] ?? '',
        attempt: Number(headers['x-media-delivery-attempt']),
        headers,
        raw: Buffer.concat(chunks).toString('utf8'),
        answered: 'held',
      };
      received.push(attempt);
      const status = receiver.answer(attempt);
      if (status !== 'hold') {
        attempt.answered = status;
        res.writeHead(status).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const receiver: CallbackReceiver = {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    answer: () => 200,
    async down() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
    async up() {
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    },
    async waitFor(predicate, timeoutMs) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const found = received.find(predicate);
        if (found) return found;
        if (Date.now() > end)
          throw new Error(
            `no matching callback attempt within ${timeoutMs} ms (got ${received.length})`,
          );
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
  return receiver;
}
