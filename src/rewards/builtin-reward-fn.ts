import type { Task } from '../spec/index.js';

/**
 * A reward function made by a built-in factory: synchronous, reads only `task` and `output`
 * (`ctx` is not needed), returns 0 or 1. Those that score against a gold answer declare its
 * task key as `goldKeys` (`GoldKeysDeclaration`), so the worker keeps it from the run.
 * Assignable to the spec's `RewardFn`.
 */
export type BuiltinRewardFn = ((task: Task, output: unknown) => number) & { readonly goldKeys?: readonly string[] };
