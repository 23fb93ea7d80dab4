import { closestKey } from '../spec/closest-key.js';
import { ProducerOptionsSchema } from './producer-options.js';

/** Options of `RolloutQueue.create`: one of them passed to a call is named as the queue's. */
const QUEUE_OPTION_KEYS: readonly string[] = Object.keys(ProducerOptionsSchema.shape);

/**
 * Checks the options object of a `RolloutQueue` call at run time, as `create()` checks its own
 * (plain JavaScript callers have no compiler to catch a typo, and `{ signl: controller.signal }`
 * left a run that no abort could cancel: fresh-user report).
 * @param method the call, for messages (`mapRollouts`).
 * @param known the option names the call takes.
 * @param required the one option that must be there, or undefined when `options` may be omitted.
 * @throws TypeError naming an unknown option (with the closest known one, or saying it is an
 *   option of `RolloutQueue.create`), a missing required option, options that are no object, or
 *   a `signal` that is no AbortSignal.
 */
export function checkCallOptions(method: string, options: unknown, known: readonly string[], required?: string): void {
  if (options === undefined && required === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${method} takes its options as an object${required ? `, with ${required}: ${method}(…, { ${required}: '…' })` : ''}; got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    // Fresh-user report: `mapRollouts(drafts, { maxInFlight: 5 })`, as README's "mapRollouts keeps
    // at most maxInFlight" reads, was refused without a word that it is the queue's option.
    if (QUEUE_OPTION_KEYS.includes(key)) {
      throw new TypeError(`${method} option "${key}" is an option of the whole queue, not of one call: pass it to RolloutQueue.create({ ${key}: … }); ${method}'s options are ${known.join(', ')}`);
    }
    const near = closestKey(key, known);
    throw new TypeError(`${method} option "${key}" is not an option${near ? ` (did you mean "${near}"?)` : ''}; its options are ${known.join(', ')}`);
  }
  const record = options as Record<string, unknown>;
  if (required !== undefined && record[required] === undefined) throw new TypeError(`${method} needs option ${required}: ${method}(…, { ${required}: '…' })`);
  const signal = record.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError(`${method} option signal must be an AbortSignal (new AbortController().signal); got ${signal === null ? 'null' : typeof signal}`);
}

/**
 * Checks that `drafts` can be iterated (an array, an iterable or an async iterable).
 * @throws TypeError naming what was passed instead.
 */
export function checkDraftSource(method: string, drafts: unknown): void {
  const iterable = drafts !== null && (typeof drafts === 'object' || typeof drafts === 'function') && (Symbol.iterator in drafts || Symbol.asyncIterator in drafts);
  if (!iterable) throw new TypeError(`${method} takes its drafts as an array, an iterable or an async iterable; got ${drafts === null ? 'null' : typeof drafts}`);
}
