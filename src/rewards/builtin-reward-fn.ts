import type { Task } from '../spec/index.js';

/**
 * A reward function made by a built-in factory: synchronous, reads only `task` and `output`
 * (`ctx` is not needed), returns 0 or 1. Assignable to the spec's `RewardFn`.
 */
export type BuiltinRewardFn = (task: Task, output: unknown) => number;
