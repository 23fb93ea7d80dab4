import { checkedConfigRecord, describeValue } from '../spec/factory-config.js';
import { CallerError } from '../spec/errors.js';

/**
 * Small helpers that check a built-in's factory config and throw a {@link CallerError}
 * naming the field, the bad value and its type, what is allowed, and the fix.
 *
 * Hand-written instead of zod: built-ins import only `../spec/` and node builtins
 * (docs/design.md "Layout"), so a Ref's config is checked here, once, at factory time; the
 * object and key checks shared with the rewards are in `../spec/factory-config.ts`.
 */

export { describeValue };

/**
 * Returns `config` as a record after checking it is a plain object whose keys are all in
 * `allowed`. Throws CallerError otherwise (a typo like `timeoutms` must not be ignored).
 */
export function configRecord(factory: string, config: unknown, allowed: readonly string[]): Record<string, unknown> {
  return checkedConfigRecord(factory, config, allowed, `an object like { ${allowed.map((key) => `"${key}": ...`).join(', ')} }`);
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
