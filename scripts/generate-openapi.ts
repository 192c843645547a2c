// Derives the OpenAPI 3.1 description of the HTTP API from the JSON Schemas in schemas/, so no
// field rule is written twice: the request and response bodies ARE the schemas the ingress
// validates with (OpenAPI 3.1 Schema Objects are JSON Schema 2020-12).
// `npm run generate:openapi` writes schemas/openapi.json (served at GET /openapi.json);
// `--check` exits 1 when that file is stale (run by the tests).
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const schemasDir = join(root, 'schemas');
export const openApiFile = join(schemasDir, 'openapi.json');

type Json = { [key: string]: unknown };

/** The schema files the HTTP API uses: schemas/http/* and everything they reference. */
async function loadSchemas(): Promise<Map<string, Json>> {
  const all = new Map<string, Json>();
  for (const entry of await readdir(schemasDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.schema.json')) continue;
    const path = join(entry.parentPath, entry.name);
    all.set(path, JSON.parse(await readFile(path, 'utf8')) as Json);
  }
  const used = new Map<string, Json>();
  const visit = (path: string): void => {
    if (used.has(path)) return;
    const schema = all.get(path);
    if (!schema) throw new Error(`schema ${relative(root, path)} is referenced but missing`);
    used.set(path, schema);
    for (const ref of refsOf(schema)) {
      const file = ref.split('#')[0];
      if (file) visit(resolve(dirname(path), file));
    }
  };
  for (const path of [...all.keys()].filter((p) => p.includes('/http/')).sort()) visit(path);
  return used;
}

function refsOf(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(refsOf);
  if (!node || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([key, value]) =>
    key === '$ref' && typeof value === 'string' ? [value] : refsOf(value),
  );
}

/** A schema placed under components/schemas/<title>: file references become document references. */
function embed(node: unknown, file: string, titleOf: (path: string) => string): unknown {
  if (Array.isArray(node)) return node.map((n) => embed(n, file, titleOf));
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema' || key === '$id' || key === 'examples') continue;
    if (key === '$ref' && typeof value === 'string') {
      const [target = '', fragment = ''] = value.split('#');
      const title = titleOf(target ? resolve(dirname(file), target) : file);
      out[key] = `#/components/schemas/${title}${fragment}`;
    } else out[key] = embed(value, file, titleOf);
  }
  return out;
}

const errorResponse = (description: string): Json => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
});

const limited = (description: string): Json => ({
  ...errorResponse(description),
  headers: {
    'Retry-After': {
      description: 'Seconds to wait before trying again.',
      schema: { type: 'integer' },
    },
  },
});

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Kept 24 h per organisation: the same key with the same path and body (apiKey aside) answers the original acknowledgement; with another request, 409.',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
};

function jobSubmission(summary: string, requestTitle: string, examples: unknown[]): Json {
  return {
    post: {
      summary,
      description:
        'The API key travels in the body (`apiKey`). 200 is sent only once the job is durably on the event bus. With an `Idempotency-Key`, a repeat within 24 h answers the first acknowledgement (same id and createdAt).',
      parameters: [idempotencyKey],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { $ref: `#/components/schemas/${requestTitle}` },
            examples: Object.fromEntries(
              examples.map((value, i) => [`example${i + 1}`, { value }]),
            ),
          },
        },
      },
      responses: {
        '200': {
          description: 'Queued.',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/JobAck' } } },
        },
        '400': errorResponse(
          'A field rule is broken (the message names the field), the JSON is invalid, or a URL is refused.',
        ),
        '401': errorResponse('apiKey is missing or unknown.'),
        '409': errorResponse(
          'The Idempotency-Key was used in the last 24 h with a different request (idempotency_conflict).',
        ),
        '413': errorResponse('The body is larger than MAX_BODY_BYTES.'),
        '415': errorResponse('The body is not sent as application/json.'),
        '429': limited(
          'The API key is over its request rate (rate_limited), or the organisation has MAX_ACTIVE_JOBS_PER_ORG jobs queued or running (too_many_jobs).',
        ),
        '503': errorResponse('The event bus did not take the job; nothing was queued.'),
      },
    },
  };
}

const jobId = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
};
const keyed = [{ apiKey: [] }, { bearer: [] }];
const imageName = {
  name: 'name',
  in: 'path',
  required: true,
  schema: { $ref: '#/components/schemas/Watermark/$defs/imageName' },
};
const imageBody = { schema: { type: 'string', contentMediaType: 'application/octet-stream' } };
const notSetUp = ' (or named images are not set up on this service)';

/** The organisation's watermark library: `imageName` in a job's watermark names one of these. */
const watermarkPaths: Json = {
  '/watermarks': {
    get: {
      summary: "The organisation's watermark images",
      security: keyed,
      responses: {
        '200': {
          description: 'The images, by name.',
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/WatermarkList' } },
          },
        },
        '401': errorResponse('No API key, or an unknown one.'),
        '404': errorResponse('Named images are not set up on this service.'),
      },
    },
  },
  '/watermarks/{name}': {
    put: {
      summary: 'Store or replace a watermark image under a name',
      description:
        'The body is the image itself. Its type is read from its bytes and must be the declared Content-Type; its size and dimensions are capped (WATERMARK_MAX_BYTES, WATERMARK_MAX_WIDTH, WATERMARK_MAX_HEIGHT).',
      security: keyed,
      parameters: [imageName],
      requestBody: {
        required: true,
        content: { 'image/png': imageBody, 'image/jpeg': imageBody, 'image/webp': imageBody },
      },
      responses: {
        '200': {
          description: 'Replaced.',
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/WatermarkImage' } },
          },
        },
        '201': {
          description: 'Stored.',
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/WatermarkImage' } },
          },
        },
        '400': errorResponse('The name breaks its rule, or the image is too wide or too tall.'),
        '401': errorResponse('No API key, or an unknown one.'),
        '404': errorResponse('Named images are not set up on this service.'),
        '413': errorResponse('The image is larger than WATERMARK_MAX_BYTES.'),
        '415': errorResponse(
          'Not a png, jpeg or webp image, or not the type its Content-Type declares.',
        ),
      },
    },
    delete: {
      summary: 'Remove a watermark image',
      security: keyed,
      parameters: [imageName],
      responses: {
        '204': { description: 'Removed.' },
        '400': errorResponse('The name breaks its rule.'),
        '401': errorResponse('No API key, or an unknown one.'),
        '404': errorResponse(`No image by that name for this organisation${notSetUp}.`),
      },
    },
  },
};

export async function buildOpenApi(): Promise<Json> {
  const schemas = await loadSchemas();
  const titleOf = (path: string): string => {
    const title = schemas.get(path)?.['title'];
    if (typeof title !== 'string') throw new Error(`${relative(root, path)} has no title`);
    return title;
  };
  const components: Json = {};
  const examplesOf: Record<string, unknown[]> = {};
  for (const [path, schema] of schemas) {
    components[titleOf(path)] = embed(schema, path, titleOf);
    if (Array.isArray(schema['examples'])) examplesOf[titleOf(path)] = schema['examples'];
  }
  const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    version: string;
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'media-service',
      version,
      description:
        'Transcode and video-summary jobs over HTTP. Generated from schemas/ by scripts/generate-openapi.ts; the HTTP contract is spec/api.md.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths: {
      '/transcode': jobSubmission(
        'Submit a transcode job',
        'TranscodeRequest',
        examplesOf['TranscodeRequest'] ?? [],
      ),
      '/summary/gif': jobSubmission(
        'Submit a GIF summary job',
        'SummaryRequest',
        examplesOf['SummaryRequest'] ?? [],
      ),
      '/summary/mp4': jobSubmission(
        'Submit an MP4 summary job',
        'SummaryRequest',
        examplesOf['SummaryRequest'] ?? [],
      ),
      '/jobs/{id}': {
        get: {
          summary: "A job's status, for its own organisation",
          security: keyed,
          parameters: [jobId],
          responses: {
            '200': {
              description: 'The job.',
              content: {
                'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } },
              },
            },
            '401': errorResponse('No API key, or an unknown one.'),
            '404': errorResponse('No such job for this organisation.'),
            '429': limited('The API key is over its request rate.'),
          },
        },
      },
      '/jobs/{id}/cancel': {
        post: {
          summary: 'Cancel a queued or running job',
          description:
            'The cancel travels on the bus to every worker: a queued job ends canceled without running, a running one has its ffmpeg killed and ends canceled; the failure callback carries the code canceled. A job that ends before a worker acts on the cancel keeps its outcome.',
          security: keyed,
          parameters: [jobId],
          responses: {
            '202': {
              description: 'The cancel is on the bus.',
              content: {
                'application/json': { schema: { $ref: '#/components/schemas/JobCancel' } },
              },
            },
            '401': errorResponse('No API key, or an unknown one.'),
            '404': errorResponse('No such job for this organisation.'),
            '409': errorResponse('The job has already ended (job_finished).'),
            '429': limited('The API key is over its request rate.'),
            '503': errorResponse('The event bus did not take the cancel.'),
          },
        },
      },
      '/jobs/{id}/callbacks/redeliver': {
        post: {
          summary: "Send the job's final callback again, with the same webhook-id",
          security: keyed,
          parameters: [jobId],
          responses: {
            '202': {
              description: 'Queued for delivery.',
              content: {
                'application/json': { schema: { $ref: '#/components/schemas/CallbackRedelivery' } },
              },
            },
            '401': errorResponse('No API key, or an unknown one.'),
            '404': errorResponse('No such job for this organisation.'),
            '409': errorResponse('The job has not finished, or asked for no callback.'),
          },
        },
      },
      ...watermarkPaths,
      '/healthz': { get: { summary: 'Liveness', responses: { '200': { description: 'Alive.' } } } },
      '/readyz': {
        get: {
          summary: 'Readiness (the bus takes publishes)',
          responses: {
            '200': { description: 'Ready.' },
            '503': errorResponse('The bus is unreachable.'),
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          responses: {
            '200': {
              description: 'Prometheus text format.',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
        },
      },
      '/openapi.json': {
        get: {
          summary: 'This document',
          responses: {
            '200': {
              description: 'OpenAPI 3.1.',
              content: { 'application/json': { schema: { type: 'object' } } },
            },
          },
        },
      },
    },
    components: {
      schemas: components,
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        bearer: { type: 'http', scheme: 'bearer' },
      },
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = `${JSON.stringify(await buildOpenApi(), null, 2)}\n`;
  if (process.argv.includes('--check')) {
    const current = await readFile(openApiFile, 'utf8').catch(() => '');
    if (current !== text) {
      process.stderr.write('schemas/openapi.json is stale: run npm run generate:openapi\n');
      process.exit(1);
    }
  } else await writeFile(openApiFile, text);
}
