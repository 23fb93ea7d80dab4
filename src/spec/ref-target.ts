/**
 * Refs as plain data, checked without zod: the rollout child resolves Refs on every rollout and
 * loads only what that needs (zod and the schemas cost a fresh child ~100 ms of CPU and ~7 MB of
 * heap, which every garbage collection of that child then walks). The zod schema of a Ref is in
 * ref-schema.ts.
 */
import { findJsonDataIssue, isPlainObject, type JsonDataIssue } from './json-data.js';

/** The export part of a Ref target: a JavaScript identifier. */
const EXPORT_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * A reference to code the *worker* has installed: `{ $ref: "<module>:<export>", config }`.
 *
 * `module` is a bare package specifier (`rollout-queue/rewards`), `export` a named export.
 * The export is a factory called as `factory(config)` to get the function, unless
 * `call: false` says the export already is the function. `config` is plain JSON data and
 * may hold nested Refs, resolved innermost first.
 */
export interface Ref {
  readonly $ref: string;
  readonly config: Record<string, unknown>;
  readonly call?: boolean;
}

/** `module` and `export` of a Ref target, split at the last `:`. */
export interface RefTarget {
  readonly module: string;
  readonly exportName: string;
}

/**
 * Splits `"module:export"` at its last colon. Returns an error message instead when the
 * target is not of that form (the message says which form is expected).
 */
/** A target as it may appear in a message: JSON-quoted (no raw newlines) and at most 200 characters. */
function quoted(target: string): string {
  const json = JSON.stringify(target);
  return json.length > 200 ? `${json.slice(0, 199)}…"` : json;
}

export function parseRefTarget(target: unknown): RefTarget | string {
  if (typeof target !== 'string') {
    return `$ref must be a string of the form "module:export", got ${target === null ? 'null' : typeof target}`;
  }
  const at = target.lastIndexOf(':');
  if (at <= 0 || at === target.length - 1) {
    return `$ref ${quoted(target)} is not of the form "module:export" (e.g. "rollout-queue/rewards:lastNumber")`;
  }
  const exportName = target.slice(at + 1);
  if (!EXPORT_NAME.test(exportName)) {
    return `$ref ${quoted(target)}: export ${quoted(exportName)} is not a JavaScript identifier; the form is "module:export"`;
  }
  return { module: target.slice(0, at), exportName };
}

/** Finds the first problem in a Ref value (shape, target, config), naming its path. */
export function findRefIssue(value: unknown, path: string, depth = 0): JsonDataIssue | undefined {
  if (!isPlainObject(value)) {
    return { path, message: 'expected a Ref object { "$ref": "module:export", "config": {...} }' };
  }
  const record = value as Record<string, unknown>;
  const target = parseRefTarget(record.$ref);
  if (typeof target === 'string') return { path: `${path}.$ref`, message: target };
  for (const key of Object.keys(record)) {
    if (key !== '$ref' && key !== 'config' && key !== 'call') {
      return { path: `${path}.${key}`, message: `unknown Ref field "${key}"; a Ref has only $ref, config and call` };
    }
  }
  if (record.call !== undefined && typeof record.call !== 'boolean') {
    return { path: `${path}.call`, message: `call must be a boolean, got ${typeof record.call}` };
  }
  const config = record.config === undefined ? {} : record.config;
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    return { path: `${path}.config`, message: `config must be an object of JSON data, got ${Array.isArray(config) ? 'array' : config === null ? 'null' : typeof config}` };
  }
  return findJsonDataIssue(config, `${path}.config`, {
    scalarArraysOnly: true,
    onRef: (nested, nestedPath, nestedDepth) => findRefIssue(nested, nestedPath, nestedDepth + 1),
  }, depth + 1);
}
