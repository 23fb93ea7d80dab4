import { goldKeyOf } from '../rewards/gold-key.js';
import { goldProblem, listKeys } from '../rewards/gold.js';
import { parseNumber } from '../rewards/numbers.js';
import { describeValue } from '../spec/factory-config.js';
import { parseRefTarget, type Ref } from '../spec/index.js';
import { LineProblems } from './line-problems.js';
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
 * @param problems where each bad line goes, reported with the other checks' (see LineProblems);
 *   without it they are reported here.
 * @throws UsageError (without `problems`) naming `file:line` of every task with a problem, the
 *   key, the task's keys, a close key as "did you mean" with the `--reward-config` that uses it,
 *   and how many tasks lack the answer (once, when every task lacks it); or the line and the
 *   value that is no usable answer.
 */
export function checkBuiltinRewardGold(file: string, tasks: readonly TaskLine[], reward: Ref, problems?: LineProblems): void {
  const target = parseRefTarget(reward.$ref);
  if (typeof target === 'string' || target.module !== 'rollout-queue/rewards') return;
  const goldKey = goldKeyOf(target.exportName, reward.config);
  if (goldKey === undefined) return;
  const found = problems ?? new LineProblems(file);
  const checked = tasks.map((at) => ({ at, problem: goldProblem(at.task, goldKey) }));
  const lacking = checked.filter(({ problem }) => problem?.kind === 'missing').length;
  for (const { at, problem } of checked) {
    if (problem === undefined) continue;
    if (problem.kind === 'type') {
      found.add(at.line, MSG.taskGoldNotScalar(file, at.line, reward.$ref, goldKey, describeValue(problem.value)));
      continue;
    }
    const fixKey = problem.suggestion ?? 'KEY';
    // The config as given with only goldKey changed, so pasting the hint keeps the other options.
    const fixConfig = JSON.stringify({ ...reward.config, goldKey: fixKey });
    found.add(at.line, MSG.taskNoGold(file, at.line, {
      reward: reward.$ref,
      goldKey,
      isNull: Object.hasOwn(at.task, goldKey),
      keys: listKeys(problem.keys),
      suggestion: problem.suggestion,
      fixConfig,
      lacking,
      total: tasks.length,
    }));
    // Every task lacks it: a wrong goldKey, said once (with its fix) rather than once a line.
    if (lacking === tasks.length) break;
  }
  if (target.exportName === 'lastNumber') refuseTextGold(file, tasks, reward.$ref, goldKey, found);
  if (!problems) found.throwIfAny();
}

/**
 * `lastNumber` compares numbers: a gold answer that is text no number can be read from (e.g.
 * "forty-two") would end its lease `caller` on the worker (the same `parseNumber` it uses).
 * Adds each such line to `problems`, naming `file:line`, the value and the rewards that compare text.
 */
function refuseTextGold(file: string, tasks: readonly TaskLine[], reward: string, goldKey: string, problems: LineProblems): void {
  for (const at of tasks) {
    const value = at.task[goldKey];
    if (typeof value === 'boolean' || (typeof value === 'string' && parseNumber(value) === undefined)) {
      problems.add(at.line, MSG.taskGoldNotNumber(file, at.line, reward, goldKey, describeValue(value)));
    }
  }
}
