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

/** Where a schema file and its `$defs` are placed under components/schemas. */
interface Names {
  /** The component of a whole file: its title. */
  titleOf(path: string): string;
  /** The component of one of its `$defs`: the def's title, else the file's title and the def's name. */
  defOf(path: string, def: string): string;
}

/**
 * A schema placed under components/schemas/<title>, made plain for stock OpenAPI tools:
 * file references become document references; `$defs` move out to components of their own
 * (code generators read a `$defs` member as a property); ajv-errors' `errorMessage`, which
 * only our validator understands, and `$schema`, `$id` and `examples` are left out.
 */
function embed(node: unknown, file: string, names: Names): unknown {
  if (Array.isArray(node)) return node.map((n) => embed(n, file, names));
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (DROPPED_KEYWORDS.has(key)) continue;
    if (key === '$ref' && typeof value === 'string') out[key] = componentRef(value, file, names);
    else out[key] = embed(value, file, names);
  }
  const variants = chainVariants(node as Json);
  if (variants && !('anyOf' in out)) out['anyOf'] = embed(variants, file, names);
  return out;
}

/**
 * The branches of an if/then/else chain that ends in `not: {}` (the watermark's variants): one
 * of them must hold, so `anyOf` of them adds no rule; it is written out for code generators,
 * which read a union from `anyOf` and nothing from `if`.
 */
function chainVariants(node: Json): unknown[] | undefined {
  const variants: unknown[] = [];
  let at: unknown = node;
  while (at && typeof at === 'object' && 'if' in at && 'then' in at) {
    variants.push((at as Json)['then']);
    at = (at as Json)['else'];
  }
  const closed = at && typeof at === 'object' && JSON.stringify((at as Json)['not']) === '{}';
  return variants.length > 1 && closed ? variants : undefined;
}

const DROPPED_KEYWORDS = new Set(['$schema', '$id', 'examples', 'errorMessage', '$defs']);

function componentRef(ref: string, file: string, names: Names): string {
  const [target = '', fragment = ''] = ref.split('#');
  const path = target ? resolve(dirname(file), target) : file;
  const def = /^\/\$defs\/([^/]+)(.*)$/.exec(fragment);
  if (def) return `#/components/schemas/${names.defOf(path, def[1] ?? '')}${def[2] ?? ''}`;
  return `#/components/schemas/${names.titleOf(path)}${fragment}`;
}

/** Every schema file and every one of its `$defs` as components, by their names. */
function componentsOf(schemas: Map<string, Json>, names: Names): Json {
  const components: Json = {};
  const place = (name: string, schema: unknown, path: string): void => {
    if (name in components) throw new Error(`two schemas would be the component ${name}`);
    components[name] = embed(schema, path, names);
  };
  for (const [path, schema] of schemas) {
    place(names.titleOf(path), schema, path);
    const defs = (schema['$defs'] ?? {}) as Record<string, unknown>;
    for (const [def, defSchema] of Object.entries(defs))
      place(names.defOf(path, def), defSchema, path);
  }
  return components;
}

function namesOf(schemas: Map<string, Json>): Names {
  const titleOf = (path: string): string => {
    const title = schemas.get(path)?.['title'];
    if (typeof title !== 'string') throw new Error(`${relative(root, path)} has no title`);
    return title;
  };
  const defOf = (path: string, def: string): string => {
    const defs = (schemas.get(path)?.['$defs'] ?? {}) as Record<string, Json | undefined>;
    const schema = defs[def];
    if (!schema) throw new Error(`${relative(root, path)} has no $defs/${def}`);
    const title = schema['title'];
    if (typeof title === 'string') return title;
    return `${titleOf(path)}${def.charAt(0).toUpperCase()}${def.slice(1)}`;
  };
  return { titleOf, defOf };
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

function jobSubmission(
  operationId: string,
  summary: string,
  requestTitle: string,
  examples: unknown[],
): Json {
  return {
    post: {
      operationId,
      summary,
      description:
        'The API key travels in the body (`apiKey`), as the contract has it, so no security scheme applies (OpenAPI has none for a body field). 200 is sent only once the job is durably on the event bus. With an `Idempotency-Key`, a repeat within 24 h answers the first acknowledgement (same id and createdAt).',
      security: [],
      'x-api-key-location': 'body: apiKey',
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
/** The routes beside the contract's three POSTs take the key in a header: either scheme. */
const keyed = [{ ApiKeyHeader: [] }, { BearerKey: [] }];
/** Health, readiness and this document need no key. */
const noKey: Json[] = [];
const imageName = {
  name: 'name',
  in: 'path',
  required: true,
  schema: { $ref: '#/components/schemas/ImageName' },
};
const imageBody = { schema: { type: 'string', contentMediaType: 'application/octet-stream' } };
const notSetUp = ' (or named images are not set up on this service)';

/** The organisation's watermark library: `imageName` in a job's watermark names one of these. */
const watermarkPaths: Json = {
  '/watermarks': {
    get: {
      operationId: 'listWatermarks',
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
    get: {
      operationId: 'getWatermark',
      summary: 'Download a stored watermark image',
      security: keyed,
      parameters: [imageName],
      responses: {
        '200': {
          description: 'The image, with its type.',
          content: { 'image/png': imageBody, 'image/jpeg': imageBody, 'image/webp': imageBody },
        },
        '400': errorResponse('The name breaks its rule.'),
        '401': errorResponse('No API key, or an unknown one.'),
        '404': errorResponse(`No image by that name for this organisation${notSetUp}.`),
      },
    },
    put: {
      operationId: 'putWatermark',
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
      operationId: 'deleteWatermark',
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

/** `GET /jobs/{id}` and the two actions on a job: the key in a header. */
const jobPaths: Json = {
  '/jobs/{id}': {
    get: {
      operationId: 'getJob',
      summary: "A job's status, for its own organisation",
      security: keyed,
      parameters: [jobId],
      responses: {
        '200': {
          description: 'The job.',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/JobStatus' } } },
        },
        '401': errorResponse('No API key, or an unknown one.'),
        '404': errorResponse('No such job for this organisation.'),
        '429': limited('The API key is over its request rate.'),
      },
    },
  },
  '/jobs/{id}/cancel': {
    post: {
      operationId: 'cancelJob',
      summary: 'Cancel a queued or running job',
      description:
        'The cancel travels on the bus to every worker: a queued job ends canceled without running, a running one has its ffmpeg killed and ends canceled; the failure callback carries the code canceled. A job that ends before a worker acts on the cancel keeps its outcome. On a job that has ended while its callback is retrying, the cancel stops those retries (the callback ends given_up).',
      security: keyed,
      parameters: [jobId],
      responses: {
        '202': {
          description: 'The cancel is on the bus.',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/JobCancel' } } },
        },
        '401': errorResponse('No API key, or an unknown one.'),
        '404': errorResponse('No such job for this organisation.'),
        '409': errorResponse(
          'The job has already ended and no callback of it is retrying (job_finished).',
        ),
        '429': limited('The API key is over its request rate.'),
        '503': errorResponse('The event bus did not take the cancel.'),
      },
    },
  },
  '/jobs/{id}/callbacks/redeliver': {
    post: {
      operationId: 'redeliverCallback',
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
};

/** Health, readiness and this document: no key. (/metrics is on METRICS_PORT, not here.) */
const operationsPaths: Json = {
  '/healthz': {
    get: {
      operationId: 'getHealth',
      summary: 'Liveness',
      security: noKey,
      responses: { '200': { description: 'Alive.' } },
    },
  },
  '/readyz': {
    get: {
      operationId: 'getReadiness',
      summary: 'Readiness (the bus takes publishes)',
      security: noKey,
      responses: {
        '200': { description: 'Ready.' },
        '503': errorResponse('The bus is unreachable.'),
      },
    },
  },
  '/openapi.json': {
    get: {
      operationId: 'getOpenApi',
      summary: 'This document',
      security: noKey,
      responses: {
        '200': {
          description: 'OpenAPI 3.1.',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  },
};

const securitySchemes: Json = {
  ApiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Api-Key',
    description:
      'The API key, on every route but the job submissions (POST /transcode, /summary/gif, /summary/mp4, /streams), which carry it in the body field `apiKey` instead.',
  },
  BearerKey: {
    type: 'http',
    scheme: 'bearer',
    description: 'The same API key as `Authorization: Bearer <key>`, where X-Api-Key is taken.',
  },
};

export async function buildOpenApi(): Promise<Json> {
  const schemas = await loadSchemas();
  const names = namesOf(schemas);
  const examplesOf = (title: string): unknown[] => {
    const path = [...schemas.keys()].find((p) => names.titleOf(p) === title);
    const examples = path === undefined ? undefined : schemas.get(path)?.['examples'];
    return Array.isArray(examples) ? examples : [];
  };
  const { version, license } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    version: string;
    license: string;
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'media-service',
      version,
      license: { name: license, identifier: license },
      description:
        'Transcode, video-summary and adaptive-streaming jobs over HTTP. Generated from schemas/ by scripts/generate-openapi.ts; the HTTP contract is spec/api.md. The job submissions carry the API key in the body (`apiKey`); every other keyed route takes it in `X-Api-Key` or as a Bearer token.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [
      {
        url: 'http://127.0.0.1:8080',
        description: 'The service on this machine, as `npm start` runs it (PORT, HOST).',
      },
    ],
    paths: {
      '/transcode': jobSubmission(
        'submitTranscode',
        'Submit a transcode job',
        'TranscodeRequest',
        examplesOf('TranscodeRequest'),
      ),
      '/summary/gif': jobSubmission(
        'submitGifSummary',
        'Submit a GIF summary job',
        'SummaryRequest',
        examplesOf('SummaryRequest'),
      ),
      '/summary/mp4': jobSubmission(
        'submitMp4Summary',
        'Submit an MP4 summary job',
        'SummaryRequest',
        examplesOf('SummaryRequest'),
      ),
      '/streams': jobSubmission(
        'submitStream',
        'Submit a stream job: an HLS and/or DASH ladder with thumbnails under an output prefix',
        'StreamRequest',
        examplesOf('StreamRequest'),
      ),
      ...jobPaths,
      ...watermarkPaths,
      ...operationsPaths,
    },
    components: { schemas: componentsOf(schemas, names), securitySchemes },
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
