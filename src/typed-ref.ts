import { ref as checkedRef, type RefOptions } from './ref/index.js';
import type { DispatchRunnerOptions } from './harness/worker/index.js';
import type { CommandRewardOptions, ContainsOptions, ExactMatchOptions, LastNumberOptions, RegexOptions } from './rewards/index.js';
import type { CodeRunnerOptions } from './runners/index.js';
import type { Ref } from './spec/index.js';

// The package entry's `ref`: the same function as src/ref's, with the config of each built-in
// factory typed by its target. It lives here because only the entry may see both src/ref and
// the built-ins' option types (.dependency-cruiser.cjs: ref imports spec alone).

/**
 * The config each built-in factory takes, keyed by its `module:export` target (what
 * `ref(target, config)` checks at compile time; the worker checks the value again at run time).
 */
export interface BuiltinRefConfigs {
  'rollout-queue/runners:codeRunner': CodeRunnerOptions;
  'rollout-queue/rewards:lastNumber': LastNumberOptions;
  'rollout-queue/rewards:exactMatch': ExactMatchOptions;
  'rollout-queue/rewards:contains': ContainsOptions;
  'rollout-queue/rewards:regex': RegexOptions;
  'rollout-queue/rewards:command': CommandRewardOptions;
  /** `dispatch` is a nested Ref here: the worker resolves it into the Dispatch function first. */
  'rollout-queue/dispatch:dispatchRunner': Omit<DispatchRunnerOptions, 'dispatch'> & { readonly dispatch: Ref };
  /** Takes no config. */
  'rollout-queue/dispatch:noReward': Readonly<Record<string, never>>;
}

/** A target naming a built-in factory. */
export type BuiltinRefTarget = keyof BuiltinRefConfigs;

/** The config `ref(target, …)` takes: a built-in's own options type, else any object (checked at run time). */
export type RefConfig<Target extends string> = Target extends BuiltinRefTarget ? BuiltinRefConfigs[Target] : object;

/** `ref`'s arguments after the target: the config may be left out only when `{}` is a valid one (not for `regex` or `command`, whose `pattern` / `command` is required). */
export type RefArgs<Target extends string> = {} extends RefConfig<Target>
  ? [config?: RefConfig<Target>, options?: RefOptions]
  : [config: RefConfig<Target>, options?: RefOptions];

/**
 * Builds a Ref `{ $ref: target, config, call? }` to code the worker has installed, and checks
 * it now rather than on the worker (see src/ref's `ref` for every rule and error). For a
 * built-in target ({@link BuiltinRefConfigs}, e.g. `'rollout-queue/rewards:lastNumber'`) the
 * config is type-checked against that factory's options: a misspelt key (`{ goldkey: … }`) or
 * a missing required one (`regex` without `pattern`) fails to compile. Any other target takes
 * any object, as before.
 *
 * @param target `"module:export"`, e.g. `"rollout-queue/runners:codeRunner"`.
 * @returns a deep-frozen Ref that survives a JSON round trip unchanged.
 * @throws RefError `malformed-target`, `not-allowed`, `bad-config` or `too-deep` (see src/ref).
 */
export function ref<const Target extends string>(target: Target, ...args: RefArgs<Target>): Ref {
  const [config, options] = args;
  return checkedRef(target, config, options);
}
