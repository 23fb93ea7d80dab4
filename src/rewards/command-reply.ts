import { CallerError } from '../spec/errors.js';
import { isPlainObject } from '../spec/json-data.js';
import type { RewardWithDetails } from '../spec/reward-details.js';

/** A plain decimal number: optional sign, digits with an optional point (or a point and digits), optional exponent. */
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Characters of a judge's stdout quoted in a message. */
const QUOTED_CHARS = 200;

/** The `caller` error of a judge whose answer is no reward (a Result's error type is the error's `type`). */
function unreadable(what: string): CallerError {
  return Object.assign(
    new CallerError(
      `the judge ${what}; it must print one finite number (e.g. 0.75) or one JSON object {"reward": 0.75, "details": {...}} on stdout, and write anything else to stderr`,
    ),
    { type: 'RewardOutOfRange' },
  );
}

function quoted(text: string): string {
  return JSON.stringify(text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text);
}

/**
 * Reads what a judge printed on stdout (secrets already replaced): a decimal number (`0.5`,
 * `1e-3`, `+1`, `.5`; surrounding whitespace allowed) or one JSON object `{"reward": <number>, "details": <any>}`
 * (`details` optional). Returns the number, or {@link RewardWithDetails}; the rollout child checks
 * the range and the details' size.
 * @throws CallerError of type `RewardOutOfRange` for anything else (empty, text, a non-finite
 *   number, an object without a numeric `reward` or with other keys), quoting the start of it.
 */
export function readJudgeReply(stdout: string): number | RewardWithDetails {
  const text = stdout.trim();
  if (text.length === 0) throw unreadable('printed nothing on stdout');
  // A decimal number as judges in any language print one (`+1`, `.5`, `1.`: Python's float() and
  // C's strtod read them; JSON does not): fresh-user report, `+1` and `.5` ended the run `caller`.
  if (DECIMAL.test(text)) {
    const number = Number(text);
    if (!Number.isFinite(number)) throw unreadable(`printed ${quoted(text)}, which is not a finite number`);
    return number;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw unreadable(`printed ${quoted(text)}, which is not a number or a JSON object`);
  }
  if (typeof value === 'number') return value;
  if (!isPlainObject(value)) throw unreadable(`printed ${quoted(text)}, which is not a number or a JSON object`);
  const extra = Object.keys(value).filter((key) => key !== 'reward' && key !== 'details');
  if (extra.length > 0) throw unreadable(`printed an object with ${extra.map((key) => JSON.stringify(key)).join(', ')} besides "reward" and "details"`);
  if (typeof value.reward !== 'number') throw unreadable(`printed an object whose "reward" is ${value.reward === undefined ? 'missing' : quoted(JSON.stringify(value.reward))}`);
  return value.details === undefined ? { reward: value.reward } : { reward: value.reward, details: value.details };
}
