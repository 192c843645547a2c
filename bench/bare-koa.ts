// The baseline of bench/ingress-throughput.ts: a bare Koa app that reads the JSON body and
// answers an acknowledgement of the same shape, with nothing else (no validation, no bus).
import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import getRawBody from 'raw-body';

const app = new Koa();
app.use(async (ctx) => {
  const body = JSON.parse(await getRawBody(ctx.req, { limit: 1 << 20, encoding: 'utf-8' })) as {
    apiKey?: unknown;
  };
  if (typeof body.apiKey !== 'string') ctx.throw(400);
  ctx.body = { id: randomUUID(), status: 'queued', createdAt: new Date().toISOString() };
});
const server = app.listen(Number(process.env['PORT'] ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ event: 'bare.listening', address: server.address() }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
