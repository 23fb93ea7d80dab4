import { CallerError } from '../spec/errors.js';
import type { Task } from '../spec/index.js';
import { describeValue } from './config-check.js';

/** Most task keys listed in a "missing gold" message. */
const MAX_KEYS_LISTED = 20;

/**
 * The gold answer `task[goldKey]`: a string, a finite number or a boolean.
 *
 * @throws CallerError when the task has no such field (or it is null), naming `goldKey` and
 *   the task's keys, or when the field holds an object or array.
 */
export function readGold(factory: string, task: Task, goldKey: string): string | number | boolean {
  const value = Object.prototype.hasOwnProperty.call(task, goldKey) ? task[goldKey] : undefined;
  if (value === undefined || value === null) {
    const keys = Object.keys(task);
    const listed = keys.length === 0 ? 'none' : keys.slice(0, MAX_KEYS_LISTED).join(', ') + (keys.length > MAX_KEYS_LISTED ? ', ...' : '');
    throw new CallerError(
      `${factory}: the task has no gold answer at task.${goldKey} (task keys: ${listed}); ` +
        `add "${goldKey}" to every task or set config.goldKey to the key that holds the answer`,
    );
  }
  if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
  throw new CallerError(`${factory}: task.${goldKey} must be a string, number or boolean, got ${describeValue(value)}; put the gold answer there as text`);
}
