import type { Ref } from '../spec/index.js';
import { validateRef } from './validate-ref.js';

/** Options of {@link ref}. */
export interface RefOptions {
  /**
   * `false`: the export already is the function; it is used as is and `config` must be
   * empty. Default: absent, meaning the export is a factory called as `factory(config)`.
   */
  readonly call?: boolean;
}

/**
 * Builds a Ref `{ $ref: target, config, call? }` to code the worker has installed, and
 * checks it now rather than on the worker: the target form, the module rules every
 * worker applies whatever its allowlist, and the config (plain JSON data and nested Refs).
 * Whether the module is allowed and exists is still decided by the worker.
 * The package entry exports this function typed per built-in target (src/typed-ref.ts:
 * a built-in factory's config is checked against its options type at compile time).
 *
 * @param target `"module:export"`, e.g. `"rollout-queue/rewards:lastNumber"`; `module` a
 *   bare package specifier (no builtins, paths or URLs).
 * @param config plain JSON data for the factory, may hold nested Refs. Default `{}`. Typed as
 *   `object` so a factory's exported options interface (e.g. `CodeRunnerOptions`, which has no
 *   index signature and so is no `Record<string, unknown>`) is accepted as it is; the value is
 *   still checked at run time.
 * @returns a deep-frozen Ref that survives a JSON round trip unchanged
 *   (`JSON.parse(JSON.stringify(r))` deep-equals `r`); `call` is present only when given.
 * @throws RefError `malformed-target` (not `module:export`, not a bare specifier),
 *   `not-allowed` (a builtin, `node:`, a path or a URL), `bad-config` (a function, a class
 *   instance, `undefined`, NaN/Infinity, an array holding an object, a `__proto__` /
 *   `constructor` / `prototype` key, a getter...) or `too-deep`, naming the path of the
 *   bad value (e.g. `config.model.temperature`).
 */
export function ref(target: string, config: object = {}, options: RefOptions = {}): Ref {
  const value: { $ref: string; config: unknown; call?: boolean } = { $ref: target, config };
  if (options.call !== undefined) value.call = options.call;
  return validateRef(value);
}
