/**
 * The gold: the task keys a reward scores against. A model-written program that could read them
 * would score by echoing them (`print(task["answer"])` scored 1 on every task), so the worker
 * removes them from the task the run side receives (`src/consumer/task-for-run.ts`); the reward
 * receives the whole task. This module holds the pieces below the consumer: how a Ref's config
 * and a reward function declare their gold keys, and the copy of a task without them. It loads
 * no package (built-in rewards import it, and they never load zod into a rollout child).
 */
import { CallerError } from './errors.js';
import { describeValue } from './factory-config.js';

/**
 * Config keys that name the gold in a reward Ref's config (any Ref of the reward's tree, nested
 * Refs included): `goldKey` (the built-in rewards' option), `gold_key` (the evolution engine's
 * convention: `Ref("agentdescent.rewards:last_number", {"gold_key": "gold"})`, see
 * docs/runners-and-rewards.md "The gold"), and their list forms `goldKeys` / `gold_keys`.
 */
export const GOLD_CONFIG_KEYS: readonly string[] = ['goldKey', 'gold_key', 'goldKeys', 'gold_keys'];

/**
 * What a reward function may declare about itself, read by the worker once the reward's Ref is
 * resolved: `goldKeys`, the task key (a string) or keys (an array of strings) it scores
 * against. Those keys are removed from the task the run receives, besides the ones its Ref's
 * config names ({@link GOLD_CONFIG_KEYS}) and the spec's own `goldKeys`. Set it with
 * {@link withGoldKeys}; the built-in rewards declare theirs (`lastNumber()` declares
 * `["answer"]`). A value other than a non-empty string or an array of them makes the rollout a
 * `caller` Result naming the reward.
 */
export interface GoldKeysDeclaration {
  readonly goldKeys?: string | readonly string[];
}

/**
 * `fn` declaring `keys` as its gold ({@link GoldKeysDeclaration}): the same function, with a
 * read-only `goldKeys` property holding a frozen copy of the keys.
 * @example export const judge = (config) => withGoldKeys((task, output) => score(output, task.solution), ['solution']);
 * @throws TypeError when a key is not a non-empty string (a factory's own bug, found at once).
 */
export function withGoldKeys<F extends (...args: never[]) => unknown>(fn: F, keys: string | readonly string[]): F & { readonly goldKeys: readonly string[] } {
  const list = typeof keys === 'string' ? [keys] : [...keys];
  for (const key of list) if (typeof key !== 'string' || key === '') throw new TypeError(`withGoldKeys: every gold key must be a non-empty task key, got ${describeValue(key)}`);
  Object.defineProperty(fn, 'goldKeys', { value: Object.freeze(list), enumerable: true });
  return fn as F & { readonly goldKeys: readonly string[] };
}

/**
 * The gold keys one Ref's `config` names at its top level under {@link GOLD_CONFIG_KEYS}: each
 * non-empty string, alone or in an array. Other values are left to the factory to refuse.
 */
export function goldKeysOfConfig(config: Readonly<Record<string, unknown>>): string[] {
  const keys: string[] = [];
  for (const name of GOLD_CONFIG_KEYS) {
    const value = config[name];
    if (typeof value === 'string') {
      if (value !== '') keys.push(value);
    } else if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'string' && item !== '') keys.push(item);
    }
  }
  return keys;
}

/**
 * The gold keys a resolved reward function declares on itself ({@link GoldKeysDeclaration}).
 * @param reward names the reward in the message (its Ref target).
 * @returns the keys, `[]` when it declares none.
 * @throws CallerError when `goldKeys` is set to anything but a non-empty string or an array of them.
 */
export function declaredGoldKeys(fn: unknown, reward: string): string[] {
  const declared = typeof fn === 'function' ? (fn as GoldKeysDeclaration).goldKeys : undefined;
  if (declared === undefined) return [];
  if (typeof declared === 'string' && declared !== '') return [declared];
  if (Array.isArray(declared) && declared.every((key) => typeof key === 'string' && key !== '')) return [...(declared as readonly string[])];
  throw new CallerError(`reward ${reward} declares goldKeys = ${describeValue(declared)}; it must be the task key its gold is at, or an array of such keys (non-empty strings): fix the reward factory`);
}

/**
 * `task` without `keys`: the task itself when it holds none of them (nothing is copied, as for
 * nearly every rollout without gold in its task), else a shallow copy without them.
 */
export function withoutKeys<T extends Readonly<Record<string, unknown>>>(task: T, keys: readonly string[]): T {
  let present = false;
  for (const key of keys) if (Object.prototype.hasOwnProperty.call(task, key)) present = true;
  if (!present) return task;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(task)) if (!keys.includes(key)) copy[key] = task[key];
  return copy as T;
}
