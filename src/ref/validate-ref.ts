import { isPlainObject, type JsonDataIssue } from '../spec/json-data.js';
import { findRefIssue, parseRefTarget, type Ref } from '../spec/ref-target.js';
import { checkBareSpecifier, isSpecifierRefusal } from './bare-specifier.js';
import { RefError } from './ref-error.js';
import { refsIn } from './refs-in.js';
import { MAX_REF_NESTING, snapshotData } from './snapshot-data.js';

/** The fix printed with every `bad-config` RefError. */
export const CONFIG_FIX =
  'A Ref\'s config holds plain JSON data only (strings, finite numbers, booleans, null, arrays of scalars, plain objects) and nested Refs; pass code as a nested Ref { "$ref": "module:export" }, never as a function or object instance';
/** The fix printed with every `malformed-target` RefError. */
export const TARGET_FIX =
  'Write $ref as "module:export" with a bare package specifier installed on the worker, e.g. "rollout-queue/rewards:lastNumber"';
/** The fix printed with a `not-allowed` RefError for a module refused whatever the allowlist. */
export const ALWAYS_REFUSED_FIX =
  'Export what you need as a factory from an installed package and name that package in $ref (the worker must allow it)';
const DEPTH_FIX = `Flatten the config or the chain of nested Refs (at most ${MAX_REF_NESTING} Refs deep)`;

function readTarget(value: unknown): string | undefined {
  try {
    if (value === null || typeof value !== 'object') return undefined;
    const descriptor = Object.getOwnPropertyDescriptor(value, '$ref');
    return descriptor && typeof descriptor.value === 'string' ? descriptor.value : undefined;
  } catch {
    return undefined;
  }
}

function fromSpecIssue(issue: JsonDataIssue, target: string | undefined): RefError {
  const path = issue.path.replace(/^\./, '');
  if (path === '$ref' || path.endsWith('.$ref')) {
    // Not reached while targets are checked first; kept so a spec rule change stays classified.
    return new RefError('malformed-target', { target, path: path.slice(0, -'$ref'.length).replace(/\.$/, ''), problem: issue.message, fix: TARGET_FIX });
  }
  // The spec's depth message; JsonDataIssue has no machine-readable reason to match instead.
  if (/^nesting deeper than/.test(issue.message)) {
    return new RefError('too-deep', { target, path, problem: issue.message, fix: DEPTH_FIX });
  }
  return new RefError('bad-config', { target, path, problem: issue.message, fix: CONFIG_FIX });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/**
 * Checks a Ref value against the wire rules (`findRefIssue` in src/spec) plus the module
 * rules every worker applies whatever its allowlist ({@link checkBareSpecifier}), for the
 * Ref itself and every Ref nested in its config. Does not consult an allowlist, never
 * imports anything.
 *
 * The value is first copied property by property (see `snapshotData`), so getters,
 * proxies and later mutation cannot change what was checked.
 *
 * @returns a deep-frozen copy `{ $ref, config, call? }` (config `{}` when absent; `call`
 *   present only when given), equal to its own `JSON.parse(JSON.stringify(...))`.
 * @throws RefError with code `malformed-target`, `not-allowed` (builtin, path or URL),
 *   `bad-config` or `too-deep`, naming the path of the first problem.
 */
export function validateRef(value: unknown): Ref {
  const snapshot = snapshotData(value);
  if ('issue' in snapshot) {
    const { issue } = snapshot;
    throw new RefError(issue.tooDeep ? 'too-deep' : 'bad-config', {
      target: readTarget(value),
      path: issue.path,
      problem: issue.message,
      fix: issue.tooDeep ? DEPTH_FIX : CONFIG_FIX,
    });
  }
  const copy = snapshot.value;
  const target = readTarget(copy);
  if (!isPlainObject(copy)) {
    throw new RefError('bad-config', {
      target,
      problem: `expected a Ref object { "$ref": "module:export", "config": {...} }, got ${Array.isArray(copy) ? 'an array' : copy === null ? 'null' : typeof copy === 'object' ? 'a class instance' : typeof copy}`,
      fix: TARGET_FIX,
    });
  }
  const located = refsIn(copy as unknown as Ref);
  // Targets first, so a bad target is reported with its own string and the Ref's path.
  for (const { ref, path } of located) {
    const parsed = parseRefTarget(ref.$ref);
    if (typeof parsed === 'string') {
      throw new RefError('malformed-target', { target: typeof ref.$ref === 'string' ? ref.$ref : undefined, path, problem: parsed, fix: TARGET_FIX });
    }
    const checked = checkBareSpecifier(parsed.module);
    if (isSpecifierRefusal(checked)) {
      throw new RefError(checked.code, {
        target: ref.$ref,
        path,
        problem: checked.reason,
        fix: checked.code === 'malformed-target' ? TARGET_FIX : ALWAYS_REFUSED_FIX,
      });
    }
  }

  let issue: JsonDataIssue | undefined;
  try {
    issue = findRefIssue(copy, '');
  } catch (error) {
    issue = { path: '', message: `could not be inspected (${error instanceof Error ? error.message : String(error)})` };
  }
  if (issue) throw fromSpecIssue(issue, target);

  for (const { ref, path } of located) {
    // `call` and `config` may be present as undefined (the spec reads them as absent);
    // drop them from the copy so that it survives a JSON round trip unchanged.
    const mutable = ref as { call?: unknown; config?: unknown };
    if (mutable.call === undefined) delete mutable.call;
    if (mutable.config === undefined) delete mutable.config;
    const config: unknown = ref.config;
    const configPath = path ? `${path}.config` : 'config';
    // findRefIssue reads `config ?? {}`, which lets `config: null` through in a nested Ref.
    if (config !== undefined && !isPlainObject(config)) {
      throw new RefError('bad-config', { target, path: configPath, problem: `config must be an object of JSON data, got ${config === null ? 'null' : typeof config}`, fix: CONFIG_FIX });
    }
    if (ref.call === false && config !== undefined && Object.keys(config).length > 0) {
      throw new RefError('bad-config', {
        target: ref.$ref,
        path: configPath,
        problem: `"call": false means the export is used as is, so its config (keys: ${Object.keys(config).join(', ')}) would be ignored`,
        fix: 'Remove the config, or drop "call": false if the export is a factory that takes it',
      });
    }
  }

  const record = copy as Record<string, unknown>;
  const result: { $ref: string; config: Record<string, unknown>; call?: boolean } = {
    $ref: record.$ref as string,
    config: (record.config ?? {}) as Record<string, unknown>,
  };
  if (typeof record.call === 'boolean') result.call = record.call;
  return deepFreeze(result);
}
