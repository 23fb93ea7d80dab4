import type { Ref } from '../spec/index.js';

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!isRecord(value)) return value;
  if (Object.prototype.hasOwnProperty.call(value, '$ref')) {
    // A Ref: `config` absent means {}, `call` absent means true.
    return { $ref: value.$ref, call: value.call !== false, config: canonical(value.config ?? {}) };
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    if (value[key] !== undefined) out[key] = canonical(value[key]);
  }
  return out;
}

/**
 * Canonical JSON of a validated Ref: object keys sorted at every level, `config` and
 * `call` filled with their defaults in every Ref, so equal Refs give equal strings
 * whatever their key order (`{ $ref, config }` and `{ config, $ref, call: true }` agree).
 * Expects the output of `validateRef` (plain JSON data).
 */
export function canonicalRefJson(ref: Ref): string {
  return JSON.stringify(canonical(ref));
}
