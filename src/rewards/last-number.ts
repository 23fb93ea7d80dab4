import { CallerError } from '../spec/errors.js';
import { withGoldKeys } from '../spec/gold-keys.js';
import type { Task } from '../spec/rollout-spec.js';
import { answerText } from './answer-text.js';
import type { BuiltinRewardFn } from './builtin-reward-fn.js';
import { configRecord, describeValue, optionalString } from './config-check.js';
import { DEFAULT_GOLD_KEY } from './gold-key.js';
import { readGold } from './gold.js';
import { findLastNumber, parseNumber } from './numbers.js';

/** Config of {@link lastNumber}. */
export interface LastNumberOptions {
  /** Task field holding the gold answer (a number, or a numeric string like "1,234"). Default `"answer"`. */
  readonly goldKey?: string;
  /**
   * Largest difference still counted as equal: `|got − gold| ≤ tolerance × max(1, |gold|)`,
   * i.e. absolute for |gold| ≤ 1 and relative above. Default 1e-9, bounds 0 ≤ tolerance < 1.
   */
  readonly tolerance?: number;
}

const FACTORY = 'lastNumber';

/**
 * Factory of `rollout-queue/rewards:lastNumber`: 1 when the **last number** in the output's
 * answer text (see {@link answerText}) equals `task[goldKey]`, else 0 (also 0 when the text
 * has no number).
 *
 * Numbers read: `42`, `-3` (a `-` right after a letter, digit or `)` is an operator, so
 * `10-3` ends in 3), `1,234,567` (commas in threes), `2.5`, `.5`, `1e3`, `−7` (Unicode minus).
 *
 * @throws CallerError at factory time for a bad option; at call time when the task has no
 *   `goldKey` field (naming it and the task's keys) or its value is not a number or a
 *   numeric string.
 */
export function lastNumber(options: LastNumberOptions = {}): BuiltinRewardFn {
  const config = configRecord(FACTORY, options, ['goldKey', 'tolerance']);
  const goldKey = optionalString(FACTORY, config, 'goldKey', DEFAULT_GOLD_KEY, DEFAULT_GOLD_KEY);
  const tolerance = config.tolerance ?? 1e-9;
  if (typeof tolerance !== 'number' || !Number.isFinite(tolerance) || tolerance < 0 || tolerance >= 1) {
    throw new CallerError(`${FACTORY}: config.tolerance must be a number from 0 (exact) up to but not including 1, got ${describeValue(tolerance)}; omit it for the default 1e-9`);
  }
  // Declared, so the worker keeps task[goldKey] from the run (docs/runners-and-rewards.md "The gold").
  return withGoldKeys((task: Task, output: unknown) => {
    const goldValue = readGold(FACTORY, task, goldKey);
    const gold = typeof goldValue === 'number' ? goldValue : typeof goldValue === 'string' ? parseNumber(goldValue) : undefined;
    if (gold === undefined) {
      throw new CallerError(`${FACTORY}: task.${goldKey} must be a number or a numeric string like "1,234", got ${describeValue(goldValue)}; use exactMatch or contains for text answers`);
    }
    const got = findLastNumber(answerText(output));
    if (got === undefined) return 0;
    return Math.abs(got - gold) <= tolerance * Math.max(1, Math.abs(gold)) ? 1 : 0;
  }, goldKey);
}
