import { goldKeyOf } from '../rewards/gold-key.js';
import { goldProblem, listKeys } from '../rewards/gold.js';
import { parseNumber } from '../rewards/numbers.js';
import { describeValue } from '../spec/factory-config.js';
import { parseRefTarget, type Ref } from '../spec/index.js';
import { UsageError } from './errors.js';
import { MSG } from './messages.js';
import type { TaskLine } from './tasks-file.js';

/**
 * Refuses, before anything is enqueued, a tasks file whose tasks lack the gold answer a
 * built-in reward (`rollout-queue/rewards:lastNumber`, `exactMatch`, `contains`) reads at
 * `config.goldKey` (default `answer`), or hold an object or array there, or (for `lastNumber`,
 * which compares numbers) text or a boolean no number can be read from. On the worker each such
 * task ends `caller` and stops the run, after everything was enqueued (fresh-user report: a
 * misspelt `"goldKey":"answr"` stopped a 240-task run at its first Result). The check is the
 * worker's own (`goldProblem`, which `readGold` throws from). A reward of any other module
 * (the user's own) is not inspected: what it reads is its business.
 *
 * @param file the tasks file as named in messages (`file:line`).
 * @param reward the `--reward` Ref, its config already accepted by `checkBuiltinRewardConfig`.
 * @throws UsageError naming `file:line` of the first task with a problem, the key, the task's
 *   keys, a close key as "did you mean" with the `--reward-config` that uses it, and how many
 *   tasks lack the answer; or naming the line and the value that is no usable answer.
 */
export function checkBuiltinRewardGold(file: string, tasks: readonly TaskLine[], reward: Ref): void {
  const target = parseRefTarget(reward.$ref);
  if (typeof target === 'string' || target.module !== 'rollout-queue/rewards') return;
  const goldKey = goldKeyOf(target.exportName, reward.config);
  if (goldKey === undefined) return;
  const problems = tasks.map(({ task }) => goldProblem(task, goldKey));
  const index = problems.findIndex((problem) => problem !== undefined);
  const first = problems[index];
  const at = tasks[index];
  if (first === undefined || at === undefined) {
    if (target.exportName === 'lastNumber') refuseTextGold(file, tasks, reward.$ref, goldKey);
    return;
  }
  if (first.kind === 'type') {
    throw new UsageError(MSG.taskGoldNotScalar(file, at.line, reward.$ref, goldKey, describeValue(first.value)));
  }
  const fixKey = first.suggestion ?? 'KEY';
  // The config as given with only goldKey changed, so pasting the hint keeps the other options.
  const fixConfig = JSON.stringify({ ...reward.config, goldKey: fixKey });
  throw new UsageError(
    MSG.taskNoGold(file, at.line, {
      reward: reward.$ref,
      goldKey,
      isNull: Object.hasOwn(at.task, goldKey),
      keys: listKeys(first.keys),
      suggestion: first.suggestion,
      fixConfig,
      lacking: problems.filter((problem) => problem?.kind === 'missing').length,
      total: tasks.length,
    }),
  );
}

/**
 * `lastNumber` compares numbers: a gold answer that is text no number can be read from (e.g.
 * "forty-two") would end its lease `caller` on the worker (the same `parseNumber` it uses).
 * @throws UsageError naming `file:line`, the value and the rewards that compare text.
 */
function refuseTextGold(file: string, tasks: readonly TaskLine[], reward: string, goldKey: string): void {
  const at = tasks.find(({ task }) => {
    const value = task[goldKey];
    return typeof value === 'boolean' || (typeof value === 'string' && parseNumber(value) === undefined);
  });
  if (at) throw new UsageError(MSG.taskGoldNotNumber(file, at.line, reward, goldKey, describeValue(at.task[goldKey])));
}
