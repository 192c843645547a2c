// The README's Quick start, terminal 1: a file server and webhook receiver on this machine, so a
// first job has somewhere to read from, upload to and call back. It serves a generated sample
// clip at /files/sample.mp4, keeps what is PUT under /files/, and prints each callback POSTed
// under /callbacks/ with whether its Standard Webhooks signature verifies against the secret
// all-in-one mode made on its first run ($DATA_DIR/webhook-secret) or WEBHOOK_SECRET.
// `npm run quickstart:files`; QUICKSTART_PORT (default 8090), DATA_DIR (default .data).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { startTestServer, type ReceivedCallback } from '../test/support/file-server.ts';
import { generateClip } from '../test/support/generate-clip.ts';

const port = Number(process.env['QUICKSTART_PORT'] ?? 8090);
const secretFile = join(process.env['DATA_DIR'] ?? '.data', 'webhook-secret');

/** The signing secret: WEBHOOK_SECRET, else the one the service made on its first run. */
function signingSecret(): { secret: string; from: string } | undefined {
  const given = process.env['WEBHOOK_SECRET'];
  if (given) return { secret: given, from: 'WEBHOOK_SECRET' };
  if (!existsSync(secretFile)) return undefined;
  return { secret: readFileSync(secretFile, 'utf8').trim(), from: secretFile };
}

/** Whether the callback's signature verifies, as a receiver would check it before trusting it. */
function verify(callback: ReceivedCallback): { ok: boolean; note: string } {
  const signing = signingSecret();
  if (!signing) return { ok: false, note: `no secret: ${secretFile} does not exist` };
  const headers = Object.fromEntries(
    Object.entries(callback.headers).map(([name, value]) => [name, String(value)]),
  );
  try {
    new Webhook(signing.secret).verify(callback.raw, headers);
    return { ok: true, note: `signature verified with ${signing.from}` };
  } catch (error) {
    return { ok: false, note: `signature NOT verified (${(error as Error).message})` };
  }
}

function summarise(body: Record<string, unknown>): string {
  const job = `job ${String(body['jobId'])} ${String(body['status'])}`;
  if (body['status'] !== 'succeeded')
    return `${job}: ${String(body['code'])} ${String(body['message'])}`;
  const result = body['result'] as Record<string, unknown> | undefined;
  return `${job}: ${String(result?.['outputUrl'])} (${String(result?.['width'])}×${String(result?.['height'])}, ${String(result?.['durationSeconds'])} s)`;
}

const server = await startTestServer({
  port,
  onUpload: (name, sizeBytes) => console.log(`upload ${name}: ${sizeBytes} bytes`),
  onCallback: (callback) => {
    const { ok, note } = verify(callback);
    console.log(`callback ${callback.path}: ${summarise(callback.body)}; ${note}`);
    console.log(`  webhook-id ${String(callback.headers['webhook-id'])}, body ${callback.raw}`);
    return ok ? 204 : 400;
  },
});
await generateClip(join(server.dir, 'sample.mp4'), {
  seconds: 5,
  width: 640,
  height: 360,
  audio: true,
});
console.log(`serving ${server.url}/files/sample.mp4 (5 s, 640×360, with sound)`);
console.log(`uploads to ${server.url}/files/<name> are kept in ${server.dir} until this stops`);
console.log(`callbacks to ${server.url}/callbacks/<name> are printed here (Ctrl-C stops)`);

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void server.close().then(() => process.exit(0)));
