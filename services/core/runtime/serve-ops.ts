import http from 'node:http';
import type { Registry } from 'prom-client';

/** /healthz, /readyz and /metrics on METRICS_PORT, apart from the API port, in every process. */
export function serveOps(options: {
  host: string;
  port: number;
  registry: Registry;
  isReady: () => Promise<boolean>;
  /** True once the process is stopping: `/readyz` is then 503 whatever the bus says. */
  isDraining?: () => boolean;
}): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const send = (status: number, body: string, type = 'application/json'): void => {
      res.writeHead(status, { 'content-type': type }).end(body);
    };
    void (async () => {
      if (req.method !== 'GET') return send(405, JSON.stringify({ error: 'only GET is allowed' }));
      if (req.url === '/healthz') return send(200, JSON.stringify({ status: 'ok' }));
      if (req.url === '/readyz' && options.isDraining?.())
        return send(503, JSON.stringify({ error: 'the service is stopping' }));
      if (req.url === '/readyz')
        return (await options.isReady())
          ? send(200, JSON.stringify({ status: 'ready' }))
          : send(503, JSON.stringify({ error: 'the event bus is not reachable' }));
      if (req.url === '/metrics')
        return send(200, await options.registry.metrics(), options.registry.contentType);
      send(404, JSON.stringify({ error: 'no such path' }));
    })().catch(() => send(500, JSON.stringify({ error: 'internal error' })));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve(server));
  });
}
