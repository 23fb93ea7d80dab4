import { CallerError } from '../spec/errors.js';
import { withGoldKeys } from '../spec/gold-keys.js';
import type { Task } from '../spec/rollout-spec.js';
import { answerText } from './answer-text.js';
import { configRecord, optionalBoolean, optionalString } from './config-check.js';
import { DEFAULT_GOLD_KEY } from './gold-key.js';
import { readGold } from './gold.js';
import type { BuiltinRewardFn } from './builtin-reward-fn.js';

/** Config of {@link contains}. */
export interface ContainsOptions {
  /** Task field holding the text to look for (a string; a number or boolean is used as its text). Default `"answer"`. */
  readonly goldKey?: string;
  /** Compare letters case-sensitively. Default false. */
  readonly caseSensitive?: boolean;
}

const FACTORY = 'contains';

/**
 * Factory of `rollout-queue/rewards:contains`: 1 when the output's answer text (see
 * {@link answerText}) contains `String(task[goldKey])`, else 0.
 *
 * @throws CallerError at factory time for a bad option; at call time when the task has no
 *   `goldKey` field, it holds an object or array, or it is empty or only whitespace (every
 *   output would contain it: a perfect score that means nothing).
 */
export function contains(options: ContainsOptions = {}): BuiltinRewardFn {
  const config = configRecord(FACTORY, options, ['goldKey', 'caseSensitive']);
  const goldKey = optionalString(FACTORY, config, 'goldKey', DEFAULT_GOLD_KEY, DEFAULT_GOLD_KEY);
  const caseSensitive = optionalBoolean(FACTORY, config, 'caseSensitive', false);
  // Declared, so the worker keeps task[goldKey] from the run (docs/runners-and-rewards.md "The gold").
  return withGoldKeys((task: Task, output: unknown) => {
    const gold = String(readGold(FACTORY, task, goldKey));
    if (gold.trim().length === 0) {
      throw new CallerError(`${FACTORY}: task.${goldKey} is empty; every output contains "", so the reward would be 1 for anything. Give the text to look for`);
    }
    const text = answerText(output);
    return (caseSensitive ? text.includes(gold) : text.toLowerCase().includes(gold.toLowerCase())) ? 1 : 0;
  }, goldKey);
}
