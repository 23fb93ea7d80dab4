import { checkedConfigRecord, describeValue } from '../spec/factory-config.js';
import { CallerError } from '../spec/errors.js';

/**
 * Checks of a reward factory's config, throwing a {@link CallerError} that names the field,
 * the bad value and its type, what is allowed, and the fix. Hand-written because built-ins
 * import only `../spec/` and node builtins (docs/design.md "Layout"); the object and key checks
 * shared with the runners are in `../spec/factory-config.ts`.
 */

export { describeValue };

/**
 * Returns `config` as a record: `undefined` counts as `{}` (every reward option has a
 * default except `regex.pattern`), anything else must be a plain object whose keys are all
 * in `allowed` (a typo like `goldkey` must not be silently ignored).
 */
export function configRecord(factory: string, config: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (config === undefined) return {};
  return checkedConfigRecord(factory, config, allowed, `an object with the options ${allowed.join(', ')}`);
}

/** An optional non-empty string option, or `fallback`. */
export function optionalString(factory: string, config: Record<string, unknown>, key: string, fallback: string, example: string): string {
  const value = config[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value.length === 0) {
    throw new CallerError(`${factory}: config.${key} must be a non-empty string like ${JSON.stringify(example)}, got ${describeValue(value)}; omit it for the default ${JSON.stringify(fallback)}`);
  }
  return value;
}

/** An optional boolean option, or `fallback`. */
export function optionalBoolean(factory: string, config: Record<string, unknown>, key: string, fallback: boolean): boolean {
  const value = config[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new CallerError(`${factory}: config.${key} must be true or false, got ${describeValue(value)}; omit it for the default ${fallback}`);
  }
  return value;
}
