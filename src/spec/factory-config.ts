import { CallerError } from './errors.js';
import { isPlainObject } from './json-data.js';

/**
 * The two config checks every built-in factory (`src/runners`, `src/rewards`) starts with.
 * They live here because built-ins may import only `spec` (docs/design.md "Layout"); each
 * built-in folder adds its own option readers in its `config-check.ts`. Deliberately not
 * exported from `spec/index.ts`: this is not part of the wire contract or the public
 * `rollout-queue/spec` surface.
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
 * `allowed` (a typo like `goldkey` or `timeoutms` must not be silently ignored).
 * @param expected what a config should look like, for the message when it is not an object
 *   at all: `${factory}: config must be ${expected}, got ${describeValue(config)}`.
 * @throws CallerError naming the factory, the bad value or key, and the allowed options.
 */
export function checkedConfigRecord(factory: string, config: unknown, allowed: readonly string[], expected: string): Record<string, unknown> {
  if (!isPlainObject(config)) {
    throw new CallerError(`${factory}: config must be ${expected}, got ${describeValue(config)}`);
  }
  for (const key of Object.keys(config)) {
    if (!allowed.includes(key)) {
      throw new CallerError(`${factory}: config.${key} is not an option; allowed options are ${allowed.join(', ')} (check the spelling)`);
    }
  }
  return config;
}
