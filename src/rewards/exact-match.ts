import { withGoldKeys } from '../spec/gold-keys.js';
import type { Task } from '../spec/rollout-spec.js';
import { answerText } from './answer-text.js';
import { configRecord, optionalBoolean, optionalString } from './config-check.js';
import { DEFAULT_GOLD_KEY } from './gold-key.js';
import { readGold } from './gold.js';
import type { BuiltinRewardFn } from './builtin-reward-fn.js';

/** Config of {@link exactMatch}. */
export interface ExactMatchOptions {
  /** Task field holding the gold answer (a string; a number or boolean is compared as its text). Default `"answer"`. */
  readonly goldKey?: string;
  /** Remove leading and trailing whitespace from both sides before comparing. Default true. */
  readonly trim?: boolean;
  /** Compare letters case-sensitively. Default true. */
  readonly caseSensitive?: boolean;
}

const FACTORY = 'exactMatch';

/**
 * Factory of `rollout-queue/rewards:exactMatch`: 1 when the output's answer text (see
 * {@link answerText}) equals `String(task[goldKey])` after the configured trimming and case
 * folding, else 0.
 *
 * @throws CallerError at factory time for a bad option; at call time when the task has no
 *   `goldKey` field or it holds an object or array.
 */
export function exactMatch(options: ExactMatchOptions = {}): BuiltinRewardFn {
  const config = configRecord(FACTORY, options, ['goldKey', 'trim', 'caseSensitive']);
  const goldKey = optionalString(FACTORY, config, 'goldKey', DEFAULT_GOLD_KEY, DEFAULT_GOLD_KEY);
  const trim = optionalBoolean(FACTORY, config, 'trim', true);
  const caseSensitive = optionalBoolean(FACTORY, config, 'caseSensitive', true);
  const canonical = (text: string): string => {
    const trimmed = trim ? text.trim() : text;
    return caseSensitive ? trimmed : trimmed.toLowerCase();
  };
  // Declared, so the worker keeps task[goldKey] from the run (docs/runners-and-rewards.md "The gold").
  return withGoldKeys((task: Task, output: unknown) => {
    const gold = String(readGold(FACTORY, task, goldKey));
    return canonical(answerText(output)) === canonical(gold) ? 1 : 0;
  }, goldKey);
}
