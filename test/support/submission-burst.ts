import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SpawnedService } from './spawn-service.ts';

/** Holds every request open: the jobs of a burst stay in their download, quietly. */
export async function startHoldingServer(): Promise<{ url: string; close(): void }> {
  const server: Server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * Sends `total` submissions over `connections` parallel loops and SIGKILLs the service as soon
 * as `killAfter` of them were acknowledged, while the others are still in flight. Returns the
 * ids acknowledged with 200 before the kill.
 */
export async function burstThenKill(
  service: SpawnedService,
  url: string,
  body: Record<string, unknown>,
  options: { total: number; connections: number; killAfter: number },
): Promise<string[]> {
  const acknowledged: string[] = [];
  let sent = 0;
  let killed: Promise<void> | undefined;
  const loop = async (): Promise<void> => {
    while (sent < options.total && !killed) {
      sent += 1;
      try {
        const res = await fetch(`${url}/transcode`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const ack = (await res.json()) as { id?: string };
        // An answer read after the kill was still sent by the process before it died.
        if (res.status === 200 && ack.id) acknowledged.push(ack.id);
        else throw new Error(`submission answered ${res.status}: ${JSON.stringify(ack)}`);
      } catch (error) {
        if (killed) return;
        throw error;
      }
      if (acknowledged.length >= options.killAfter) killed ??= service.kill();
    }
  };
  await Promise.all(Array.from({ length: options.connections }, loop));
  await killed;
  return acknowledged;
}
