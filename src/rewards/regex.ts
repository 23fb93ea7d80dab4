import { CallerError } from '../spec/errors.js';
import { answerText } from './answer-text.js';
import { configRecord, describeValue } from './config-check.js';
import type { BuiltinRewardFn } from './builtin-reward-fn.js';

/** Config of {@link regex}. */
export interface RegexOptions {
  /** JavaScript regular expression source, without slashes, e.g. `"^Answer: 4\\d$"`. Required, non-empty. */
  readonly pattern: string;
  /**
   * RegExp flags from `d i m s u v` (each at most once). Default `""`. `g` and `y` are refused:
   * they make `test()` remember `lastIndex` between calls, so the same output could score
   * differently on two rollouts.
   */
  readonly flags?: string;
}

const FACTORY = 'regex';

/**
 * Factory of `rollout-queue/rewards:regex`: 1 when `pattern` matches anywhere in the
 * output's answer text (see {@link answerText}; anchor it with `^`/`$` for a whole match),
 * else 0. The task is not read.
 *
 * @throws CallerError at factory time when `pattern` is missing or not a valid regular
 *   expression (quoting the engine's message), or `flags` holds anything but `dimsuv`.
 */
export function regex(options: RegexOptions): BuiltinRewardFn {
  const config = configRecord(FACTORY, options, ['pattern', 'flags']);
  const { pattern, flags = '' } = config;
  if (typeof pattern !== 'string' || pattern.length === 0) {
    throw new CallerError(`${FACTORY}: config.pattern must be a non-empty regular expression source like "^Answer: \\\\d+$", got ${describeValue(pattern)}`);
  }
  if (typeof flags !== 'string' || !/^[dimsuv]*$/.test(flags) || new Set(flags).size !== flags.length) {
    throw new CallerError(
      `${FACTORY}: config.flags must be a string of distinct flags from "dimsuv" (g and y are refused: they make matching stateful), got ${describeValue(flags)}`,
    );
  }
  let compiled: RegExp;
  try {
    compiled = new RegExp(pattern, flags);
  } catch (err) {
    throw new CallerError(`${FACTORY}: config.pattern ${JSON.stringify(pattern)} with flags ${JSON.stringify(flags)} is not a valid regular expression: ${(err as Error).message}`);
  }
  return (_task, output) => (compiled.test(answerText(output)) ? 1 : 0);
}
