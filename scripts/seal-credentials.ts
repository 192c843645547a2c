// Seals bucket credentials for a job produced straight to Kafka, as the ingress does for an
// HTTP request: reads the credentials JSON from stdin and the key from CREDENTIALS_KEYS (the
// first key seals, as in the services), and prints the object to put in the event's
// `data.input.creds` or `data.output.creds`. The job id is bound to the sealed object, so it
// opens only in the job it was sealed for.
//
//   echo '{"region":"eu-west-1","accessKeyId":"…","secretAccessKey":"…"}' | \
//   CREDENTIALS_KEYS=k1:<base64 of 32 bytes> npm run --silent seal-credentials -- <job id>
import { text } from 'node:stream/consumers';
import { ConfigError, parseSealingKeys } from '../services/core/config.ts';
import { seal } from '../services/core/crypto/secret-box.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function fail(message: string): never {
  process.stderr.write(`seal-credentials: ${message}\n`);
  process.exit(2);
}

const jobId = process.argv[2] ?? '';
if (!UUID.test(jobId))
  fail('usage: npm run --silent seal-credentials -- <job id (a UUID)> < credentials.json');
let keys;
try {
  keys = parseSealingKeys(process.env['CREDENTIALS_KEYS']);
} catch (error) {
  fail(error instanceof ConfigError ? error.message : 'CREDENTIALS_KEYS cannot be read');
}
const key = keys[0];
if (!key)
  fail('CREDENTIALS_KEYS is not set: it must hold the key the workers open credentials with');
let credentials: unknown;
try {
  credentials = JSON.parse(await text(process.stdin));
} catch {
  // The input is a secret: it is never echoed, not even in part.
  fail('stdin is not JSON');
}
if (typeof credentials !== 'object' || credentials === null || Array.isArray(credentials))
  fail('stdin must be a JSON object');
process.stdout.write(`${JSON.stringify(seal(credentials, key, jobId))}\n`);
