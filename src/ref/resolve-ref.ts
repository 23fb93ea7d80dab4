import { brandedKind } from '../spec/errors.js';
import { parseRefTarget, type Ref, type RefTarget } from '../spec/ref-target.js';
import { Allowlist } from './allowlist.js';
import { checkBareSpecifier, isSpecifierRefusal } from './bare-specifier.js';
import { canonicalRefJson } from './canonical-ref-json.js';
import { defaultImporter, type Importer } from './importer.js';
import { cachedResolve, checkedRef, rememberCheckedRef, type CheckedRef, type ResolvedFunction } from './ref-cache.js';
import { RefError } from './ref-error.js';
import { refsIn } from './refs-in.js';
import { validateRef } from './validate-ref.js';

/** Options of {@link resolveRef}. */
export interface ResolveRefOptions {
  /**
   * The worker's allowlist: a compiled {@link Allowlist}, or patterns compiled on the spot
   * (`Allowlist.compile`, which throws AllowlistError for a malformed pattern). Required:
   * which code a queue writer may run is the worker's explicit decision.
   */
  readonly allow: Allowlist | readonly string[];
  /**
   * Loads a module by specifier. Default: Node's `import()` ({@link defaultImporter}).
   * Tests and sandbox children pass their own; resolved Refs are cached per importer.
   */
  readonly importer?: Importer;
}

const MAX_CAUSE_CHARS = 600;

/** Each pattern array's compiled allowlist, with the patterns it was compiled from. */
const compiled = new WeakMap<readonly string[], { readonly patterns: readonly string[]; readonly allowlist: Allowlist }>();

/**
 * `Allowlist.compile(allow)`, once per array: a worker passes the same array on every
 * rollout. An array changed since is compiled again (its patterns are compared each time).
 */
function allowlistOf(allow: readonly string[]): Allowlist {
  const known = Array.isArray(allow) ? compiled.get(allow) : undefined;
  if (known && known.patterns.length === allow.length && known.patterns.every((pattern, i) => pattern === allow[i])) return known.allowlist;
  const allowlist = Allowlist.compile(allow);
  compiled.set(allow, { patterns: [...allow], allowlist });
  return allowlist;
}
const MAX_LISTED_EXPORTS = 10;

function errorText(error: unknown): string {
  try {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return text.length > MAX_CAUSE_CHARS ? `${text.slice(0, MAX_CAUSE_CHARS)}…` : text;
  } catch {
    return '(an unprintable value)';
  }
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value !== 'object') return `a ${typeof value}`;
  if (Array.isArray(value)) return 'an array';
  try {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
    return typeof name === 'string' && name !== 'Object' ? `an instance of ${name}` : 'an object';
  } catch {
    return 'an object';
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function';
}

function packageOf(module: string): string {
  const checked = checkBareSpecifier(module);
  return isSpecifierRefusal(checked) ? module : checked.packageName;
}

async function loadExport(ref: Ref, target: RefTarget, importer: Importer): Promise<unknown> {
  const { module, exportName } = target;
  const cannotImport = (problem: string, cause?: unknown): RefError =>
    new RefError('cannot-import', {
      target: ref.$ref,
      problem,
      fix: `The worker resolves the module against its own installed code, not the coordinator's: next to its rollout-queue install, then from its working directory (${process.cwd()}). Install the package on the worker (npm install ${packageOf(module)} in the project the worker runs from) in a version that exports "${exportName}", and check that it loads there`,
      cause,
    });
  let namespace: unknown;
  try {
    namespace = await importer(module);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    throw cannotImport(`the worker could not import module "${module}" (${typeof code === 'string' ? `${code} ` : ''}${errorText(error)})`, error);
  }
  if (namespace === null || (typeof namespace !== 'object' && typeof namespace !== 'function')) {
    throw cannotImport(`importing module "${module}" gave ${describeType(namespace)}, not a module namespace`);
  }
  let names: string[];
  try {
    if (Object.prototype.hasOwnProperty.call(namespace, exportName)) return (namespace as Record<string, unknown>)[exportName];
    names = Object.keys(namespace).sort();
  } catch (error) {
    throw cannotImport(`module "${module}" could not be read (${errorText(error)}); is it still loading (a circular import)?`, error);
  }
  const lower = exportName.toLowerCase();
  const ordered = [...names.filter((name) => name.toLowerCase() === lower), ...names.filter((name) => name.toLowerCase() !== lower)];
  const listed = ordered.slice(0, MAX_LISTED_EXPORTS).join(', ');
  const more = names.length > MAX_LISTED_EXPORTS ? ` and ${names.length - MAX_LISTED_EXPORTS} more` : '';
  throw new RefError('no-such-export', {
    target: ref.$ref,
    problem: `module "${module}" has no export "${exportName}"; ${names.length === 0 ? 'it has no exports at all' : `it exports: ${listed}${more}`}`,
    fix: 'Use one of its exports after the ":" (check the spelling, and the version installed on the worker)',
  });
}

async function materialize(value: unknown, path: string, allowlist: Allowlist, importer: Importer): Promise<unknown> {
  if (Array.isArray(value)) return [...(value as unknown[])]; // arrays hold scalars only
  if (value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  if (Object.prototype.hasOwnProperty.call(record, '$ref')) {
    try {
      return await resolveValidated(record as unknown as Ref, allowlist, importer);
    } catch (error) {
      throw error instanceof RefError ? error.under(path) : error;
    }
  }
  const out: Record<string, unknown> = {};
  // Sequential, in key order: nested Refs are built one at a time, innermost first.
  for (const key of Object.keys(record)) out[key] = await materialize(record[key], `${path}.${key}`, allowlist, importer);
  return out;
}

async function build(ref: Ref, allowlist: Allowlist, importer: Importer): Promise<ResolvedFunction> {
  const target = parseRefTarget(ref.$ref) as RefTarget; // checked by validateRef
  const exported = await loadExport(ref, target, importer);
  const name = `export "${target.exportName}" of module "${target.module}"`;
  if (typeof exported !== 'function') {
    throw new RefError('not-callable', {
      target: ref.$ref,
      problem: `${name} is ${describeType(exported)}, not a function`,
      fix: ref.call === false
        ? 'With "call": false the export itself must be the function; name an exported function'
        : 'The export must be a factory function (config) => function; name an exported factory',
    });
  }
  if (ref.call === false) return exported as ResolvedFunction;

  const config = (await materialize(ref.config ?? {}, 'config', allowlist, importer)) as Record<string, unknown>;
  const keys = Object.keys(ref.config ?? {});
  let made: unknown;
  try {
    made = (exported as (config: Record<string, unknown>) => unknown)(config);
    if (typeof made !== 'function' && isThenable(made)) made = await made;
  } catch (error) {
    // A transient of the plane (e.g. a secret missing on this worker) keeps its kind.
    if (brandedKind(error) === 'infrastructure') throw error;
    throw new RefError('factory-threw', {
      target: ref.$ref,
      problem: `factory "${target.exportName}" threw on its config (${keys.length === 0 ? 'empty config' : `keys: ${keys.join(', ')}`}): ${errorText(error)}`,
      fix: `Check the config against what "${target.exportName}" expects (config values are not shown here)`,
      cause: error,
    });
  }
  if (typeof made !== 'function') {
    throw new RefError('not-callable', {
      target: ref.$ref,
      problem: `factory ${name} returned ${describeType(made)}, not a function`,
      fix: 'A factory must return the function (run or reward); if the export already is that function, set "call": false',
    });
  }
  return made as ResolvedFunction;
}

function resolveValidated(ref: Ref, allowlist: Allowlist, importer: Importer): Promise<ResolvedFunction> {
  return resolveChecked({ ref, key: cacheKey(ref, allowlist) }, allowlist, importer);
}

/** The key of a validated Ref in the resolved cache: its canonical JSON and the allowlist. */
function cacheKey(ref: Ref, allowlist: Allowlist): string {
  return `${canonicalRefJson(ref)}\nallow:${allowlist.key}`;
}

function resolveChecked(checked: CheckedRef, allowlist: Allowlist, importer: Importer): Promise<ResolvedFunction> {
  return cachedResolve(importer, checked.key, () => build(checked.ref, allowlist, importer));
}

/** `options.allow` compiled (see {@link ResolveRefOptions.allow}). */
function allowlistFrom(allow: Allowlist | readonly string[]): Allowlist {
  return allow instanceof Allowlist ? allow : allowlistOf(allow);
}

/**
 * Steps 1 and 2 of {@link resolveRef}: the validated Ref, once it and every Ref nested in it
 * are admitted by `allowlist`.
 * @throws RefError as {@link resolveRef} does before any import.
 */
function checkRef(value: unknown, allowlist: Allowlist): Ref {
  const ref = validateRef(value);
  for (const { ref: located, path } of refsIn(ref)) {
    const { module } = parseRefTarget(located.$ref) as RefTarget;
    const decision = allowlist.check(module);
    if (!decision.allowed) {
      throw new RefError(decision.code, {
        target: located.$ref,
        path,
        problem: decision.reason,
        // Fresh-user report: workers of one queue with different --allow lists answered every
        // other dispatch with this caller Result; the fix names that case.
        fix: `Use a module the worker allows, or widen the worker's allowlist explicitly (worker --allow "${packageOf(module)}/*", library option allow: ["${packageOf(module)}/*"]), on every worker that serves the queue: any of them may take the lease (give a worker with another allowlist a queue or placement labels of its own); whoever can write to the queue can run any allowed code`,
      });
    }
  }
  return ref;
}

/**
 * Turns a Ref into its function on the worker: `factory(config)`, or the export itself
 * with `call: false`.
 *
 * 1. Checks the Ref and its nested Refs as `validateRef` does (form, module rules, config).
 * 2. Checks every module in the tree against `allow` **before any import**, so a refused
 *    module's top level never runs, nor does any module of a tree holding a refused one.
 * 3. Imports the module with `importer` and finds the export (a function).
 * 4. Resolves nested Refs in the config, innermost first, sequentially in key order, and
 *    replaces each by its function in a fresh copy of the config.
 * 5. Calls `factory(config)`; a factory returning a promise is awaited. The result must be
 *    a function, returned as is (not wrapped).
 *
 * Results are cached per process (by importer, canonical Ref and allowlist), also for
 * nested Refs; concurrent calls share one promise and failures are not cached. See
 * `clearRefCache`.
 *
 * @returns the function (rejects, never throws synchronously).
 * @throws RefError: `malformed-target`, `not-allowed`, `bad-config`, `too-deep` (before any
 *   import), `cannot-import`, `no-such-export`, `not-callable`, `factory-threw`; for a
 *   nested Ref, `path` names where it sits (`config.judge`). An error branded
 *   `infrastructure` (see spec `brandedKind`) thrown by a factory is rethrown unchanged.
 *   AllowlistError when `allow` holds a malformed pattern (an array of patterns is compiled
 *   once and reused while its patterns stay the same).
 */
export async function resolveRef<F extends ResolvedFunction = ResolvedFunction>(value: unknown, options: ResolveRefOptions): Promise<F> {
  const allowlist = allowlistFrom(options.allow);
  return (await resolveValidated(checkRef(value, allowlist), allowlist, options.importer ?? defaultImporter)) as F;
}

/**
 * {@link resolveRef} of the Ref whose JSON text is `json` (`resolveRef(JSON.parse(json), options)`,
 * same result, same errors), for Refs that arrive as JSON, e.g. a rollout child's from its IPC
 * channel. A text seen before with the same allowlist patterns skips the parse, the validation,
 * the allowlist checks and the canonical key: the steps before any import are a pure function
 * of the text and the patterns. Only texts that passed them are remembered (per process, at
 * most MAX_CACHED_REFS, see `clearRefCache`), so a refused text is refused again each time
 * with the same RefError; what follows (import, factory) goes through the resolved cache as
 * with {@link resolveRef}, where failures are not cached either.
 *
 * @returns the function (rejects, never throws synchronously).
 * @throws SyntaxError when `json` is not JSON text; otherwise as {@link resolveRef}.
 */
export function resolveRefJson<F extends ResolvedFunction = ResolvedFunction>(json: string, options: ResolveRefOptions): Promise<F> {
  // Not async: a text seen before gets the cached promise itself, without a wrapper per call.
  try {
    const allowlist = allowlistFrom(options.allow);
    // Valid JSON text never holds a raw NUL, nor does an allowlist pattern: the key is unambiguous.
    const textKey = `${allowlist.key}\u0000${json}`;
    let checked = checkedRef(textKey);
    if (!checked) {
      const ref = checkRef(JSON.parse(json) as unknown, allowlist);
      checked = { ref, key: cacheKey(ref, allowlist) };
      rememberCheckedRef(textKey, checked);
    }
    return resolveChecked(checked, allowlist, options.importer ?? defaultImporter) as Promise<F>;
  } catch (error) {
    return Promise.reject(error);
  }
}
