// How another system submits a job without the HTTP API: produce a media.job.requested
// CloudEvent straight to Kafka, keyed by the job id, in either content mode of the CloudEvents
// Kafka binding (MODE=structured, the default, or MODE=binary). Its data must pass
// schemas/events/job-requested.v1.schema.json; only the attributes CloudEvents requires are
// sent (specversion, id, source, type) and subject. Bucket credentials, if any, are sealed with
// `npm run seal-credentials`; an http(s) input and output need none.
//
//   KAFKA_BROKERS=127.0.0.1:9092 ORG_ID=acme \
//   INPUT_URL=https://files.example.com/in.mp4 OUTPUT_URL=https://files.example.com/out.webm \
//   SUCCESS_URL=https://hooks.example.com/ok npm run --silent example:produce
//
// It prints the job id; GET /jobs/<id> (with a key of the same organisation) then shows it.
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};

const jobId = randomUUID();
const data = {
  jobId,
  kind: 'transcode',
  orgId: env('ORG_ID'),
  attempt: 1,
  submittedAt: new Date().toISOString(),
  input: { url: env('INPUT_URL') },
  output: { url: env('OUTPUT_URL') },
  transcode: {
    encoder: env('ENCODER', 'vp9'),
    container: env('CONTAINER', 'webm'),
    bitrateKbps: env('BITRATE_KBPS', '1000'),
  },
  ...(process.env['SUCCESS_URL'] || process.env['FAILURE_URL']
    ? {
        callbacks: {
          ...(process.env['SUCCESS_URL'] ? { successUrl: process.env['SUCCESS_URL'] } : {}),
          ...(process.env['FAILURE_URL'] ? { failureUrl: process.env['FAILURE_URL'] } : {}),
        },
      }
    : {}),
};
const attributes = {
  specversion: '1.0',
  id: randomUUID(),
  source: 'example/produce-transcode-job',
  type: 'media.job.requested',
  subject: jobId,
};
const mode = env('MODE', 'structured');
if (mode !== 'structured' && mode !== 'binary')
  throw new Error('MODE must be structured or binary');
// Structured: the whole event is the value. Binary: each attribute is a ce_ header, the value
// is the data alone, and content-type is the data's type.
const message =
  mode === 'structured'
    ? {
        key: jobId,
        value: JSON.stringify({ ...attributes, data }),
        headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
      }
    : {
        key: jobId,
        value: JSON.stringify(data),
        headers: {
          ...Object.fromEntries(
            Object.entries(attributes).map(([name, value]) => [`ce_${name}`, value]),
          ),
          'content-type': 'application/json',
        },
      };

const kafka = new Kafka({
  clientId: 'example-producer',
  brokers: env('KAFKA_BROKERS').split(','),
  logLevel: logLevel.ERROR,
});
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
try {
  await producer.send({
    topic: `${process.env['TOPIC_PREFIX'] ?? ''}media.jobs.transcode.v1`,
    acks: -1,
    messages: [message],
  });
  process.stdout.write(`${jobId}\n`);
} finally {
  await producer.disconnect();
}
