// Derives TypeScript types from the JSON Schemas in schemas/, so that no contract is written twice.
// `node scripts/generate-types.ts` writes services/core/contracts/types.generated.ts;
// `--check` exits 1 when that file is stale (run by the tests).
import { readFile, writeFile, readdir } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { compile } from 'json-schema-to-typescript';

const root = new URL('..', import.meta.url).pathname;
const schemasDir = join(root, 'schemas');
const outFile = join(root, 'services/core/contracts/types.generated.ts');

type Json = { [key: string]: unknown };

async function listSchemaFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.schema.json'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

// json-schema-to-typescript ignores if/then/else; a chain of them that picks a variant by
// which property is present is, for typing, the union of its `then` branches.
function collectThenBranches(node: Json): unknown[] {
  const branches: unknown[] = [];
  let cursor: Json | undefined = node;
  while (cursor && 'if' in cursor) {
    if (cursor['then']) branches.push(cursor['then']);
    cursor = cursor['else'] as Json | undefined;
  }
  return branches;
}

/** Finds the schema a `$ref` names, from the schema `$id` it appears in. */
type Resolve = (ref: string, baseId: string) => unknown;

function forTyping(node: unknown, baseId: string, resolve: Resolve): unknown {
  if (Array.isArray(node)) return node.map((n) => forTyping(n, baseId, resolve));
  if (!node || typeof node !== 'object') return node;
  const copy: Json = {};
  for (const [key, value] of Object.entries(node as Json)) {
    if (key === 'if' || key === 'then' || key === 'else' || key === 'not' || key === 'errorMessage')
      continue;
    const kept = key === 'allOf' ? withoutRuleOnly(value as unknown[], baseId, resolve) : value;
    copy[key] = forTyping(kept, baseId, resolve);
  }
  const obj = node as Json;
  if ('if' in obj && obj['properties'] === undefined) {
    const branches = collectThenBranches(obj);
    if (branches.length > 1) copy['anyOf'] = branches.map((b) => forTyping(b, baseId, resolve));
  }
  return copy;
}

/** Keywords that only constrain a value or describe it, adding no shape to its type. */
const RULE_ONLY = new Set(['if', 'then', 'else', 'not', 'errorMessage', 'title', 'description']);
const ABOUT = new Set(['$schema', '$id', '$comment']);

// Rules across fields (a spec's `$defs/rules`, the location rules) stand in an allOf beside
// the shapes they constrain; to json-schema-to-typescript, which ignores if/then, they would
// be open objects, and an intersection with one lets any field through.
function withoutRuleOnly(members: unknown[], baseId: string, resolve: Resolve): unknown[] {
  return members.filter((member) => !isRuleOnly(member, baseId, resolve));
}

function isRuleOnly(member: unknown, baseId: string, resolve: Resolve): boolean {
  const ref = (member as Json)['$ref'];
  const target = typeof ref === 'string' ? resolve(ref, baseId) : member;
  if (!target || typeof target !== 'object') return false;
  const base = typeof ref === 'string' ? new URL(ref, baseId).href : baseId;
  return Object.entries(target).every(([key, value]: [string, unknown]) =>
    key === 'allOf'
      ? (value as unknown[]).every((m) => isRuleOnly(m, base, resolve))
      : RULE_ONLY.has(key) || ABOUT.has(key),
  );
}

async function loadAll(): Promise<Map<string, { file: string; schema: Json }>> {
  const raw = new Map<string, { file: string; schema: Json }>();
  for (const file of await listSchemaFiles(schemasDir)) {
    const schema = JSON.parse(await readFile(file, 'utf8')) as Json;
    raw.set(String(schema['$id']), { file, schema });
  }
  const resolve: Resolve = (ref, baseId) => {
    const url = new URL(ref, baseId);
    let node: unknown = raw.get(`${url.origin}${url.pathname}`)?.schema;
    for (const part of url.hash.replace(/^#\/?/, '').split('/').filter(Boolean))
      node = (node as Json | undefined)?.[decodeURIComponent(part)];
    return node;
  };
  const byId = new Map<string, { file: string; schema: Json }>();
  for (const [id, { file, schema }] of raw)
    byId.set(id, { file, schema: forTyping(schema, id, resolve) as Json });
  return byId;
}

async function generate(): Promise<string> {
  const byId = await loadAll();
  const parts: string[] = [];
  const seen = new Set<string>();
  for (const [id, { file, schema }] of byId) {
    const ts = await compile(schema, String(schema['title']), {
      bannerComment: '',
      cwd: dirname(file),
      additionalProperties: false,
      unreachableDefinitions: true,
      format: true,
    });
    parts.push(`// from ${relative(root, id.replace('https://media-service.dev/', ''))}`);
    for (const decl of splitDeclarations(ts)) {
      const name = /export (?:interface|type) (\w+)/.exec(decl)?.[1] ?? decl;
      if (seen.has(name)) continue;
      seen.add(name);
      parts.push(decl);
    }
  }
  return (
    '// Generated by scripts/generate-types.ts from schemas/. Do not edit by hand.\n' +
    '/* eslint-disable */\n\n' +
    parts.join('\n') +
    '\n'
  );
}

function splitDeclarations(ts: string): string[] {
  return ts
    .split(/\n(?=export )/)
    .map((d) => d.trim())
    .filter(Boolean);
}

const text = await generate();
if (process.argv.includes('--check')) {
  const current = await readFile(outFile, 'utf8').catch(() => '');
  if (current !== text) {
    console.error('types.generated.ts is stale: run `node scripts/generate-types.ts`');
    process.exit(1);
  }
} else {
  await writeFile(outFile, text);
}
