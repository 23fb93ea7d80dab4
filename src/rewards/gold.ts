import { CallerError } from '../spec/errors.js';
import { closestKey } from '../spec/closest-key.js';
import type { Task } from '../spec/index.js';
import { describeValue } from './config-check.js';

/** Most task keys listed in a "missing gold" message. */
const MAX_KEYS_LISTED = 20;

/** Why `task[goldKey]` is not a usable gold answer (see {@link goldProblem}). */
export type GoldProblem =
  /**
   * No such field, or it is null. `keys`: the task's keys; `suggestion`: the one of them close
   * to `goldKey` (a misspelling or another letter case), if any.
   */
  | { readonly kind: 'missing'; readonly keys: readonly string[]; readonly suggestion?: string }
  /** The field holds an object, an array or a non-finite number. */
  | { readonly kind: 'type'; readonly value: unknown };

/**
 * What is wrong with `task[goldKey]` as a gold answer, or `undefined` when it is a string, a
 * finite number or a boolean. The one definition of a usable gold answer: {@link readGold}
 * throws from it on the worker, and the CLI's `run` checks every task line with it before
 * anything is enqueued.
 */
export function goldProblem(task: Task, goldKey: string): GoldProblem | undefined {
  const value = Object.prototype.hasOwnProperty.call(task, goldKey) ? task[goldKey] : undefined;
  if (value === undefined || value === null) {
    const keys = Object.keys(task);
    const suggestion = closestKey(goldKey, keys);
    return suggestion === undefined ? { kind: 'missing', keys } : { kind: 'missing', keys, suggestion };
  }
  if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return undefined;
  return { kind: 'type', value };
}

/** `id, question, answer`, at most {@link MAX_KEYS_LISTED} of them; `none` for no keys. */
export function listKeys(keys: readonly string[]): string {
  if (keys.length === 0) return 'none';
  return keys.slice(0, MAX_KEYS_LISTED).join(', ') + (keys.length > MAX_KEYS_LISTED ? ', ...' : '');
}

/**
 * The gold answer `task[goldKey]`: a string, a finite number or a boolean.
 *
 * @throws CallerError when the task has no such field (or it is null), naming `goldKey`, the
 *   task's keys and, when one of them is close to `goldKey` (`answr` for `answer`), that key as
 *   the likely fix; or when the field holds an object or array.
 */
export function readGold(factory: string, task: Task, goldKey: string): string | number | boolean {
  const problem = goldProblem(task, goldKey);
  if (problem === undefined) return task[goldKey] as string | number | boolean;
  if (problem.kind === 'missing') {
    // A near miss is far likelier a misspelt goldKey than 240 tasks lacking a field: name it first.
    const fix =
      problem.suggestion !== undefined
        ? `did you mean ${JSON.stringify(problem.suggestion)}? set config.goldKey to it, or add ${JSON.stringify(goldKey)} to every task`
        : `add ${JSON.stringify(goldKey)} to every task or set config.goldKey to the key that holds the answer`;
    throw new CallerError(`${factory}: the task has no gold answer at task.${goldKey} (task keys: ${listKeys(problem.keys)}); ${fix}`);
  }
  throw new CallerError(`${factory}: task.${goldKey} must be a string, number or boolean, got ${describeValue(problem.value)}; put the gold answer there as text`);
}
