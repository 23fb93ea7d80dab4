import { CallerError, isPlainObject } from '../spec/index.js';

/**
 * Small helpers that check a built-in's factory config and throw a {@link CallerError}
 * naming the field, the bad value and its type, what is allowed, and the fix.
 *
 * Hand-written instead of zod: built-ins import only `../spec/index.js` and node builtins
 * (DESIGN.md "Layout"), so a Ref's config is checked here, once, at factory time.
 */

/** Short, safe description of a value for an error message: `-5 (number)`, `"abc" (string)`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return `${JSON.stringify(shown)} (string)`;
  }
  if (typeof value === 'object') return 'an object';
  return `${String(value)} (${typeof value})`;
}

/**
 * Returns `config` as a record after checking it is a plain object whose keys are all in
 * `allowed`. Throws CallerError otherwise (a typo like `timeoutms` must not be ignored).
 */
export function configRecord(factory: string, config: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (!isPlainObject(config)) {
    throw new CallerError(
      `${factory}: config must be an object like { ${allowed.map((key) => `"${key}": ...`).join(', ')} }, got ${describeValue(config)}`,
    );
  }
  for (const key of Object.keys(config)) {
    if (!allowed.includes(key)) {
      throw new CallerError(
        `${factory}: config.${key} is not an option; allowed options are ${allowed.join(', ')} (check the spelling)`,
      );
    }
  }
  return config;
}

/**
 * Reads an optional integer option in `[min, max]`, or `fallback` when absent (undefined).
 * `unit` is spelled out in the message, e.g. "milliseconds".
 */
export function optionalInteger(
  factory: string,
  config: Record<string, unknown>,
  key: string,
  bounds: { readonly min: number; readonly max: number; readonly fallback: number; readonly unit: string },
): number {
  const value = config[key];
  if (value === undefined) return bounds.fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < bounds.min || value > bounds.max) {
    throw new CallerError(
      `${factory}: config.${key} must be an integer number of ${bounds.unit} from ${bounds.min} to ${bounds.max}, got ${describeValue(value)}; ` +
        `omit it for the default ${bounds.fallback}`,
    );
  }
  return value;
}
