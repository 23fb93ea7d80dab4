import { MAX_JSON_DEPTH } from '../spec/json-data.js';

/** Deepest chain of Refs nested in each other's config; the outermost Ref counts as 1. */
export const MAX_REF_NESTING = 8;

/** Why a value could not be copied. `tooDeep` marks depth problems (RefError `too-deep`). */
export interface SnapshotIssue {
  readonly path: string;
  readonly message: string;
  readonly tooDeep: boolean;
}

/** Bound on the walk itself; the spec's MAX_JSON_DEPTH check on the copy is the real rule. */
const MAX_WALK_DEPTH = MAX_JSON_DEPTH + 2 * MAX_REF_NESTING + 4;

class Stop {
  constructor(readonly issue: SnapshotIssue) {}
}

function stop(path: string, message: string, tooDeep = false): never {
  throw new Stop({ path, message, tooDeep });
}

const hasOwn = (value: object, key: PropertyKey): boolean => Object.prototype.hasOwnProperty.call(value, key);

function copy(value: unknown, path: string, depth: number, refNesting: number, ancestors: Set<object>): unknown {
  // -0 is written 0 by JSON: copied as 0, so the Ref equals its own JSON round trip (a fast-check counterexample, `{"": -0}`).
  if (Object.is(value, -0)) return 0;
  if (value === null || typeof value !== 'object') return value; // scalars and functions: judged by the spec rules
  if (depth > MAX_WALK_DEPTH) stop(path, `nesting deeper than ${MAX_JSON_DEPTH} levels; flatten the value`, true);
  if (ancestors.has(value)) stop(path, 'the value contains itself (a cycle); JSON data is a tree');
  try {
    if (Array.isArray(value)) return copyArray(value as unknown[], path, depth, refNesting, ancestors);
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return value; // a class instance: refused by the spec rules, by its constructor's name
    let nesting = refNesting;
    if (hasOwn(value, '$ref')) {
      nesting += 1;
      if (nesting > MAX_REF_NESTING) {
        stop(path, `Refs are nested more than ${MAX_REF_NESTING} deep; flatten the chain (pass a nested function through fewer layers)`, true);
      }
    }
    ancestors.add(value);
    const out: Record<string, unknown> = {}; // a null-prototype object is plain data too; the copy is an ordinary one
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key === 'symbol') stop(path, `has a symbol key ${String(key)}; JSON data has string keys only`);
      const keyPath = path ? `${path}.${key}` : key;
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if (!descriptor) continue;
      if (!descriptor.enumerable) stop(keyPath, 'is a non-enumerable property, which JSON drops; make it a plain enumerable field');
      if (!('value' in descriptor)) stop(keyPath, 'is a getter/setter; JSON data holds plain values (read it once and pass the value)');
      // defineProperty keeps a "__proto__" key as an own property, so the spec rules see and refuse it.
      Object.defineProperty(out, key, {
        value: copy(descriptor.value, keyPath, depth + 1, nesting, ancestors),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    ancestors.delete(value);
    return out;
  } catch (error) {
    if (error instanceof Stop) throw error;
    return stop(path, `could not be read (${error instanceof Error ? error.message : String(error)}); pass plain JSON data, not a proxy`);
  }
}

function copyArray(value: unknown[], path: string, depth: number, refNesting: number, ancestors: Set<object>): unknown[] {
  ancestors.add(value);
  const length = value.length;
  const out: unknown[] = [];
  for (let i = 0; i < length; i++) {
    const descriptor = Object.getOwnPropertyDescriptor(value, i);
    if (!descriptor) stop(`${path}[${i}]`, 'is a hole in a sparse array; JSON turns it into null, so write null');
    if (!('value' in descriptor)) stop(`${path}[${i}]`, 'is a getter/setter; JSON data holds plain values');
    out.push(copy(descriptor.value, `${path}[${i}]`, depth + 1, refNesting, ancestors));
  }
  for (const key of Reflect.ownKeys(value)) {
    if (key === 'length' || (typeof key === 'string' && /^(0|[1-9]\d*)$/.test(key) && Number(key) < length)) continue;
    stop(path, `is an array with an extra property ${String(key)}, which JSON drops`);
  }
  ancestors.delete(value);
  return out;
}

/**
 * Copies a caller's value into fresh plain objects and arrays, reading each property once
 * through its descriptor, so that what is validated afterwards is exactly what is used
 * (no getter, proxy trap or later mutation can change it). Scalars, functions and class
 * instances are kept as they are, for the spec rules to judge and name.
 *
 * Refused here (with the path): getters/setters, symbol or non-enumerable keys, sparse
 * array holes, extra array properties, cycles, Refs nested more than
 * {@link MAX_REF_NESTING} deep, and anything a proxy trap throws on.
 *
 * @returns `{ value }` (the copy) or `{ issue }`. Never throws.
 */
export function snapshotData(value: unknown): { readonly value: unknown } | { readonly issue: SnapshotIssue } {
  try {
    return { value: copy(value, '', 0, 0, new Set()) };
  } catch (error) {
    if (error instanceof Stop) return { issue: error.issue };
    return { issue: { path: '', message: `could not be read (${String(error)})`, tooDeep: false } };
  }
}
