/**
 * Rules for "plain JSON data", the only thing a Ref's config or a task may hold.
 *
 * Why a hand-written walk instead of a zod schema: the value must be inspected *before*
 * anything else touches it (a getter, a `toJSON`, a prototype), and the error must name the
 * exact path of the first bad value ("config.model.temperature"), which is what a caller
 * needs to fix it.
 */

/** Deepest nesting accepted in a config or task (objects, arrays and nested Refs). */
export const MAX_JSON_DEPTH = 32;

/** Keys refused anywhere: they reach `Object.prototype` through naive merges. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** One problem found in a value: where (`path`, e.g. `config.model.temperature`) and what. */
export interface JsonDataIssue {
  readonly path: string;
  readonly message: string;
}

/** Options of {@link findJsonDataIssue}. */
export interface JsonDataRules {
  /** Arrays may hold only scalars (true for Ref config, false for tasks). */
  readonly scalarArraysOnly: boolean;
  /** Called for an object that has a `$ref` key; returns an issue or undefined. */
  readonly onRef?: (value: Record<string, unknown>, path: string, depth: number) => JsonDataIssue | undefined;
  /**
   * Also accept what `JSON.stringify` writes faithfully though it is not plain data: an object
   * with a `toJSON` method (a Date: its JSON form is its own choice) and an object field that is
   * `undefined` (left out); keys such as `__proto__` are data there. For a rollout's output,
   * stored as its JSON form.
   */
  readonly jsonForm?: boolean;
  /** Deepest nesting accepted. Default {@link MAX_JSON_DEPTH}. */
  readonly maxDepth?: number;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (typeof value === 'object') {
    const ctor = (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name;
    return ctor ? `instance of ${ctor}` : 'object';
  }
  return typeof value;
}

/** True for a plain object: `{}` or `Object.create(null)`, never a class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Returns the first issue that keeps `value` from being plain JSON data, or undefined.
 * Accepts: strings, finite numbers, booleans, null, arrays, plain objects. Refuses:
 * `undefined`, functions, symbols, bigints, NaN/Infinity, class instances, forbidden keys,
 * nesting deeper than {@link MAX_JSON_DEPTH}, and (with `scalarArraysOnly`) arrays holding
 * objects or arrays.
 */
export function findJsonDataIssue(
  value: unknown,
  path: string,
  rules: JsonDataRules,
  depth = 0,
): JsonDataIssue | undefined {
  const maxDepth = rules.maxDepth ?? MAX_JSON_DEPTH;
  if (depth > maxDepth) {
    return { path, message: `nesting deeper than ${maxDepth} levels (or a cycle); flatten the value` };
  }
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value)
        ? undefined
        : { path, message: `got ${describe(value)}; only finite numbers are JSON data (use null or a string)` };
    case 'object': {
      if (value === null) return undefined;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          const itemPath = `${path}[${i}]`;
          if (rules.scalarArraysOnly && item !== null && typeof item === 'object') {
            return {
              path: itemPath,
              message: `got ${Array.isArray(item) ? 'array' : describe(item)} inside an array; config arrays hold only scalars (string, number, boolean, null); use an object keyed by name instead`,
            };
          }
          const issue = findJsonDataIssue(item, itemPath, rules, depth + 1);
          if (issue) return issue;
        }
        return undefined;
      }
      if (!isPlainObject(value)) {
        if (rules.jsonForm && typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
        return { path, message: `got ${describe(value)}; only plain objects are JSON data (pass its fields as a plain object)` };
      }
      if (rules.onRef && Object.prototype.hasOwnProperty.call(value, '$ref')) {
        return rules.onRef(value, path, depth);
      }
      for (const key of Object.keys(value)) {
        const keyPath = path ? `${path}.${key}` : key;
        // Output is data, never merged into objects: its keys are its own.
        if (FORBIDDEN_KEYS.has(key) && !rules.jsonForm) {
          return { path: keyPath, message: `key "${key}" is not allowed (prototype pollution); rename it` };
        }
        if (rules.jsonForm && value[key] === undefined) continue;
        const issue = findJsonDataIssue(value[key], keyPath, rules, depth + 1);
        if (issue) return issue;
      }
      // JSON.parse turns a "__proto__" key into an own property; Object.keys lists it, so it was checked above.
      return undefined;
    }
    default:
      return { path, message: `got ${describe(value)}; only JSON data (string, finite number, boolean, null, array, plain object) is allowed` };
  }
}
