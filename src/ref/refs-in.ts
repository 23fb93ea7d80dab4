import { isPlainObject } from '../spec/json-data.js';
import type { Ref } from '../spec/ref-target.js';

/** One Ref found by {@link refsIn}: the Ref and where it sits (`''` for the outermost, else e.g. `config.judge`). */
export interface LocatedRef {
  readonly ref: Ref;
  readonly path: string;
}

/**
 * Lists `ref` and every Ref nested in its config, outermost first, in key order.
 * Descends only into plain objects (never arrays, where Refs are not allowed, nor class
 * instances), so it is safe on the output of `snapshotData` before the spec rules ran.
 */
export function refsIn(ref: Ref, path = ''): LocatedRef[] {
  const found: LocatedRef[] = [{ ref, path }];
  const visit = (value: unknown, at: string): void => {
    if (!isPlainObject(value)) return;
    if (Object.prototype.hasOwnProperty.call(value, '$ref')) {
      found.push(...refsIn(value as unknown as Ref, at));
      return;
    }
    for (const key of Object.keys(value)) visit(value[key], `${at}.${key}`);
  };
  const config: unknown = ref.config;
  if (isPlainObject(config)) for (const key of Object.keys(config)) visit(config[key], `${path ? `${path}.` : ''}config.${key}`);
  return found;
}
