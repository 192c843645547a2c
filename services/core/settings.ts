// The machinery behind config.ts: a setting is declared once (variable, type, rule, default,
// description), every value is checked by one ajv validator compiled from the declarations,
// and the table of docs/configuration.md is rendered from the same declarations.
import { createRequire } from 'node:module';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import type { Plugin } from 'ajv';
import { isAddressOrRange } from './net/address-policy.ts';

// ajv's plugins are CommonJS with a `default` the ESM loader does not unwrap the way tsc expects.
const require = createRequire(import.meta.url);
const addErrors = require('ajv-errors') as Plugin<unknown>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Readonly<Record<string, string | undefined>>;
type JsonValue = string | number | boolean | string[];
/** Every variable's value as read from the environment (after the kind's conversion), by name. */
export type ReadValues = Readonly<Record<string, JsonValue | undefined>>;

/**
 * How the variable's text becomes the value the schema checks: `integer` (digits only),
 * `boolean` (true/false/1/0), `list` (comma-separated, blanks dropped) or `string`.
 */
export type Kind = 'string' | 'integer' | 'boolean' | 'list';

export interface Setting<T> {
  /** The environment variable. */
  env: string;
  kind: Kind;
  /** JSON Schema of the read value (the list's items for `list`); ajv-errors `errorMessage` allowed. */
  schema: Record<string, unknown>;
  /** Value used when the variable is unset or empty (in read form); none: unset. */
  default?: JsonValue;
  /** The table's default column (docs/configuration.md); derived from `default` when absent. */
  shownDefault?: string;
  /** The table's meaning column (docs/configuration.md). */
  doc: string;
  /** Said after the variable's name when the value breaks `schema` (e.g. "must be an http(s) URL"). */
  rule?: string;
  /** Messages never repeat a secret's value. */
  secret?: boolean;
  /** The typed field from the checked value (and, for derived defaults, the other values). */
  build: (value: JsonValue | undefined, all: ReadValues) => T;
}

export type SettingsValues<S extends Record<string, Setting<unknown>>> = {
  [K in keyof S]: S[K] extends Setting<infer T> ? T : never;
};

// ---- builders for the common kinds -------------------------------------------------------

type Doc = { doc: string; shownDefault?: string };

export function integer(
  env: string,
  o: Doc & { default: number; minimum: number; maximum: number },
): Setting<number> {
  return {
    env,
    kind: 'integer',
    schema: { type: 'integer', minimum: o.minimum, maximum: o.maximum },
    default: o.default,
    doc: o.doc,
    ...(o.shownDefault !== undefined && { shownDefault: o.shownDefault }),
    build: (v) => v as number,
  };
}

/** An integer that may be left unset (the code then decides, e.g. from what it finds at start). */
export function optionalInteger(
  env: string,
  o: Doc & { minimum: number; maximum: number },
): Setting<number | undefined> {
  return {
    env,
    kind: 'integer',
    schema: { type: 'integer', minimum: o.minimum, maximum: o.maximum },
    doc: o.doc,
    ...(o.shownDefault !== undefined && { shownDefault: o.shownDefault }),
    build: (v) => v as number | undefined,
  };
}

export function flag(env: string, o: Doc & { default: boolean }): Setting<boolean> {
  return { env, kind: 'boolean', schema: { type: 'boolean' }, ...o, build: (v) => v as boolean };
}

export function text(
  env: string,
  o: Doc & { default: string; pattern?: string; rule?: string },
): Setting<string> {
  const { pattern, ...rest } = o;
  return {
    env,
    kind: 'string',
    schema: { type: 'string', ...(pattern !== undefined && { pattern }) },
    ...rest,
    build: (v) => v as string,
  };
}

export function optionalText(
  env: string,
  o: Doc & { pattern?: string; rule?: string; secret?: boolean },
): Setting<string | undefined> {
  const { pattern, ...rest } = o;
  return {
    env,
    kind: 'string',
    schema: { type: 'string', ...(pattern !== undefined && { pattern }) },
    ...rest,
    build: (v) => v as string | undefined,
  };
}

/** An http(s) URL; `also`, a lookahead, narrows it further (e.g. a placeholder it must hold). */
export function httpUrl(
  env: string,
  o: Doc & { secret?: boolean; also?: string; rule?: string },
): Setting<string | undefined> {
  const { also, rule, ...rest } = o;
  return optionalText(env, {
    ...rest,
    pattern: `^${also ?? ''}https?://[^\\s/?#]+[^\\s]*$`,
    rule: rule ?? 'must be an http(s) URL',
  });
}

export function oneOf<const V extends string>(
  env: string,
  values: readonly V[],
  o: Doc & { default: V },
): Setting<V> {
  return {
    env,
    kind: 'string',
    schema: { enum: [...values] },
    ...o,
    build: (v) => v as V,
  };
}

export function list(
  env: string,
  o: Doc & { items: Record<string, unknown>; rule?: string; secret?: boolean },
): Setting<readonly string[]> {
  const { items, ...rest } = o;
  return {
    env,
    kind: 'list',
    schema: items,
    ...rest,
    build: (v) => Object.freeze([...((v as string[] | undefined) ?? [])]),
  };
}

// ---- reading and checking ----------------------------------------------------------------

function read(kind: Kind, raw: string): JsonValue {
  switch (kind) {
    case 'integer':
      return /^\d+$/.test(raw) ? Number(raw) : raw;
    case 'boolean':
      return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw;
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    case 'string':
      return raw;
  }
}

function schemaOf(setting: Setting<unknown>): Record<string, unknown> {
  return setting.kind === 'list' ? { type: 'array', items: setting.schema } : setting.schema;
}

/** A message naming the variable and the rule; a secret's value is never repeated. */
function messageFor(setting: Setting<unknown>, error: ErrorObject, value: unknown): string {
  const name = setting.env;
  const got = setting.secret ? '' : `, got ${JSON.stringify(value)}`;
  const { minimum, maximum } = setting.schema as { minimum?: number; maximum?: number };
  if (error.keyword === 'errorMessage') return `${name} ${error.message ?? 'is not valid'}`;
  if (error.keyword === 'type' && setting.kind === 'integer')
    return `${name} must be a whole number${got}`;
  if (error.keyword === 'type' && setting.kind === 'boolean')
    return `${name} must be true or false${got}`;
  if (error.keyword === 'minimum' || error.keyword === 'maximum')
    return `${name} must be between ${minimum} and ${maximum}, got ${String(value)}`;
  if (error.keyword === 'enum')
    return `${name} must be one of ${(setting.schema['enum'] as string[]).join(', ')}${got}`;
  return `${name} ${setting.rule ?? error.message ?? 'is not valid'}${got}`;
}

/**
 * Compiles the declarations into one validator: `load(env)` reads every variable, checks all of
 * them in declaration order with ajv, and builds the frozen, typed object.
 */
export function compileSettings<S extends Record<string, Setting<unknown>>>(
  settings: S,
): (env: Env) => Readonly<SettingsValues<S>> {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  ajv.addFormat('ip-or-cidr', isAddressOrRange);
  addErrors(ajv);
  const list = Object.values(settings);
  const byEnv = new Map(list.map((s) => [s.env, s]));
  const validate = ajv.compile({
    type: 'object',
    properties: Object.fromEntries(list.map((s) => [s.env, schemaOf(s)])),
  });
  return (env) => {
    const values: Record<string, JsonValue | undefined> = {};
    for (const s of list) {
      const raw = env[s.env];
      values[s.env] = raw === undefined || raw === '' ? s.default : read(s.kind, raw);
    }
    const defined = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
    if (!validate(defined)) {
      const error = validate.errors?.[0];
      const [, name = '', index] = (error?.instancePath ?? '').split('/');
      const setting = byEnv.get(name);
      if (!error || !setting) throw new ConfigError('the configuration is not valid');
      const value = values[name];
      throw new ConfigError(
        messageFor(setting, error, Array.isArray(value) ? value[Number(index)] : value),
      );
    }
    const built = Object.entries(settings).map(([field, s]) => [
      field,
      s.build(values[s.env], values),
    ]);
    return Object.freeze(Object.fromEntries(built)) as Readonly<SettingsValues<S>>;
  };
}

// ---- the table of docs/configuration.md --------------------------------------------------

function shownDefault(s: Setting<unknown>): string {
  if (s.shownDefault !== undefined) return s.shownDefault;
  if (s.default === undefined) return '(unset)';
  if (s.default === '') return '(empty)';
  return Array.isArray(s.default) ? s.default.join(',') || '–' : String(s.default);
}

/** The table of docs/configuration.md (unformatted markdown; prettier aligns it). */
export function settingsTable(settings: Record<string, Setting<unknown>>): string {
  const rows = Object.values(settings).map(
    (s) => `| ${s.env} | ${shownDefault(s)} | ${s.doc.replaceAll('|', '\\|')} |`,
  );
  return ['| variable | default | meaning |', '| --- | --- | --- |', ...rows].join('\n') + '\n';
}
