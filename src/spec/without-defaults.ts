import { RolloutSpecSchema, type RolloutSpec, type RolloutSpecInput } from './rollout-spec.js';

/**
 * The top-level fields a parse fills in when absent, each with its default value: found
 * by parsing a spec that names none of them, so the schema stays their one source.
 */
const DEFAULTED_FIELDS: ReadonlyArray<readonly [keyof RolloutSpec, unknown]> = (() => {
  const minimal: Record<string, unknown> = { v: 1, leaseId: 'r.t', runId: 'r', runAttemptId: 'a', rendered: '', task: {}, run: { $ref: 'm:e' }, reward: { $ref: 'm:e' } };
  const parsed = RolloutSpecSchema.parse(minimal);
  return (Object.keys(parsed) as (keyof RolloutSpec)[]).filter((key) => !(key in minimal)).map((key) => [key, parsed[key]] as const);
})();

/**
 * `spec` without the top-level fields that equal their default (`sandbox`, `placement`,
 * `timeouts`, `class`, `rewardRange` as a parse fills them): what the producer writes as job
 * data. Fewer bytes go through Redis, and a worker's parse fills a default instead of checking
 * a value; parsing the result gives `spec` back.
 */
export function withoutDefaults(spec: RolloutSpec): RolloutSpecInput {
  const omitted: string[] = [];
  for (const [key, value] of DEFAULTED_FIELDS) if (sameJson(spec[key], value)) omitted.push(key);
  if (omitted.length === 0) return spec;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(spec)) if (!omitted.includes(key)) out[key] = spec[key as keyof RolloutSpec];
  return out as RolloutSpecInput;
}

/**
 * True when `a` and `b` have the same JSON text (key order included), for parsed spec values:
 * what comparing their `JSON.stringify` tells, without building the strings (once per job).
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  const bKeys = Object.keys(b);
  if (aKeys.length !== bKeys.length) return false;
  for (let i = 0; i < aKeys.length; i++) {
    const key = aKeys[i] as string;
    if (key !== bKeys[i] || !sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false;
  }
  return true;
}
