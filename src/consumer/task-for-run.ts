import { refsIn } from '../ref/refs-in.js';
// Not ../spec/index.js: the rollout child never loads the zod schemas (child-imports.test.ts).
import { declaredGoldKeys, goldKeysOfConfig, withoutKeys } from '../spec/gold-keys.js';
import type { RolloutSpec, Task } from '../spec/rollout-spec.js';

/** The task as the run side sees it, and the gold keys kept from it. */
export interface RunView {
  /** What `run(rendered, task, ctx)` receives: the spec's task without {@link goldKeys} (the same object when it holds none). */
  readonly task: Task;
  /** The keys removed (whether or not the task held them), for `ctx.goldKeys`; `[]` when the spec set `goldVisibleToRun`. */
  readonly goldKeys: readonly string[];
}

const WHOLE_TASK: readonly string[] = Object.freeze([]);

/**
 * The gold keys of a rollout, in the order found, each once: every key named under
 * `goldKey`/`gold_key`/`goldKeys`/`gold_keys` in the config of the reward's Ref or of any Ref
 * nested in it (the evolution engine's `gold_key` convention, the built-in rewards' `goldKey`),
 * every key the resolved reward function declares as `goldKeys`, and the spec's own `goldKeys`.
 * @param reward the function `spec.reward` resolved to.
 * @throws CallerError when the reward declares `goldKeys` that are not task keys (see `declaredGoldKeys`).
 */
export function goldKeysOf(spec: Pick<RolloutSpec, 'reward' | 'goldKeys'>, reward: unknown): string[] {
  const keys = new Set<string>();
  for (const { ref } of refsIn(spec.reward)) for (const key of goldKeysOfConfig(ref.config)) keys.add(key);
  for (const key of declaredGoldKeys(reward, spec.reward.$ref)) keys.add(key);
  for (const key of spec.goldKeys ?? []) keys.add(key);
  return [...keys];
}

/**
 * What the run side of a rollout receives, decided on the worker after both Refs are resolved,
 * so it holds whatever wrote the job (library, CLI, gateway, another language): the task
 * without its gold keys ({@link goldKeysOf}), unless the spec opted in with `goldVisibleToRun`.
 * The reward is handed `spec.task` itself. A model-written program echoing its gold scored 1 on
 * every task (issue 28, case BR-61-gold-on-stdin).
 * @throws CallerError as {@link goldKeysOf} does.
 */
export function taskForRun(spec: Pick<RolloutSpec, 'task' | 'reward' | 'goldKeys' | 'goldVisibleToRun'>, reward: unknown): RunView {
  if (spec.goldVisibleToRun === true) return { task: spec.task, goldKeys: WHOLE_TASK };
  const goldKeys = goldKeysOf(spec, reward);
  return { task: withoutKeys(spec.task, goldKeys), goldKeys: Object.freeze(goldKeys) };
}
