import type { Ref } from '../spec/index.js';
import { canonicalJson } from '../spec/canonical-json.js';

/** A Ref written with its defaults: `config` absent means {}, `call` absent means true; other objects as they are. */
function withRefDefaults(value: Record<string, unknown>): Record<string, unknown> {
  if (!Object.prototype.hasOwnProperty.call(value, '$ref')) return value;
  return { $ref: value.$ref, call: value.call !== false, config: value.config ?? {} };
}

/**
 * Canonical JSON of a validated Ref (`canonicalJson`): object keys sorted at every level,
 * `config` and `call` filled with their defaults in every Ref, so equal Refs give equal strings
 * whatever their key order (`{ $ref, config }` and `{ config, $ref, call: true }` agree).
 * Expects the output of `validateRef` (plain JSON data); any JSON value is accepted (only
 * objects holding `$ref` are special).
 */
export function canonicalRefJson(ref: Ref): string {
  return canonicalJson(ref, withRefDefaults);
}
