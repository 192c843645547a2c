// A floor for bench/ingress-throughput.ts: the bare Koa app (bare-koa.ts) plus the one thing the
// contract cannot drop, the durable write. It reads and parses the same body, publishes it as
// one record to the transcode request topic on the configured bus (the embedded bus, or Kafka
// with acks=all, group commit as the ingress has it) and answers once the bus has it. No
// validation, sealing, status view or logging: whatever an ingress does, it cannot beat this.
import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import getRawBody from 'raw-body';
import { requestTopicOf } from '../services/core/bus/event-bus.ts';
import { loadConfig } from '../services/core/config.ts';
import { silentLogger } from '../services/core/observability/logger.ts';
import { createBus } from '../services/core/runtime/create-bus.ts';

const config = loadConfig(process.env);
const bus = createBus(config, silentLogger, 'floor');
const topic = requestTopicOf.transcode;
const app = new Koa();
app.use(async (ctx) => {
  const raw = await getRawBody(ctx.req, { limit: 1 << 20, encoding: 'utf-8' });
  const body = JSON.parse(raw) as { apiKey?: unknown };
  if (typeof body.apiKey !== 'string') ctx.throw(400);
  const id = randomUUID();
  await bus.publish([{ topic, key: id, value: Buffer.from(raw) }]);
  ctx.body = { id, status: 'queued', createdAt: new Date().toISOString() };
});
// Topics exist (Kafka) before the first request is timed.
await bus.isReady();
const server = app.listen(config.port, '127.0.0.1', () => {
  console.log(JSON.stringify({ event: 'floor.listening', address: server.address() }));
});
process.on('SIGTERM', () => server.close(() => void bus.close().then(() => process.exit(0))));
