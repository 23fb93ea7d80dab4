import * as builtinRewards from '../rewards/index.js';
import { goldKeyOf } from '../rewards/gold-key.js';
import { goldProblem, listKeys } from '../rewards/gold.js';
import { compileCodeRunnerOptions } from '../runners/code-runner-options.js';
import { parseRefTarget } from '../spec/index.js';

/** Why a draft's built-in Ref would end its lease `caller` on the worker: the draft field and the message. */
export interface BuiltinRefRefusal {
  /** The draft field at fault: `run.config`, `reward.$ref`, `task.answer`, … */
  readonly field: string;
  readonly message: string;
}

const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/**
 * What the workers would refuse about a draft's built-in Refs, checked before anything is
 * enqueued, as `rollout-queue run` checks them (fresh-user report: through the gateway and the
 * Python client a misspelt `entrypiont` was enqueued and stopped the run on the worker, and a
 * task without its gold answer ran the program before ending `caller`):
 * - `run` of `rollout-queue/runners`: only `codeRunner`, with a config its factory accepts;
 * - `reward` of `rollout-queue/rewards`: an export the module has, a config its factory accepts,
 *   and a usable gold answer in the task at the reward's gold key (`goldProblem`, the worker's own test).
 * Refs of other modules are the user's and pass; so does a draft whose shape the producer's own
 * check refuses (it names the field then).
 * @param draft one element of `POST /runs`'s `drafts`, as sent.
 * @returns the first refusal, or undefined.
 */
export function builtinRefRefusal(draft: unknown): BuiltinRefRefusal | undefined {
  const record = asRecord(draft);
  if (!record) return undefined;
  return runRefusal(record) ?? rewardRefusal(record);
}

function runRefusal(draft: Record<string, unknown>): BuiltinRefRefusal | undefined {
  const run = asRecord(draft.run);
  const target = typeof run?.$ref === 'string' ? parseRefTarget(run.$ref) : undefined;
  if (!run || target === undefined || typeof target === 'string' || target.module !== 'rollout-queue/runners') return undefined;
  if (target.exportName !== 'codeRunner') return { field: 'run.$ref', message: `${run.$ref} is no export of rollout-queue/runners; its one runner is rollout-queue/runners:codeRunner` };
  try {
    compileCodeRunnerOptions(run.config ?? {});
  } catch (err) {
    return { field: 'run.config', message: (err as Error).message };
  }
  // An entrypoint missing from model-written rendered.files is the model's fault (model/BadRenderedFile), not refused here.
  return undefined;
}

function rewardRefusal(draft: Record<string, unknown>): BuiltinRefRefusal | undefined {
  const reward = asRecord(draft.reward);
  const target = typeof reward?.$ref === 'string' ? parseRefTarget(reward.$ref) : undefined;
  if (!reward || target === undefined || typeof target === 'string' || target.module !== 'rollout-queue/rewards') return undefined;
  const factory = (builtinRewards as Record<string, unknown>)[target.exportName];
  if (typeof factory !== 'function') {
    return { field: 'reward.$ref', message: `${reward.$ref} is no export of rollout-queue/rewards; its rewards are ${Object.keys(builtinRewards).sort().join(', ')}` };
  }
  const config = reward.config ?? {};
  try {
    (factory as (config: unknown) => unknown)(config);
  } catch (err) {
    return { field: 'reward.config', message: (err as Error).message };
  }
  const goldKey = goldKeyOf(target.exportName, config as Record<string, unknown>);
  const task = asRecord(draft.task);
  if (goldKey === undefined || !task) return undefined;
  const problem = goldProblem(task, goldKey);
  if (problem === undefined) return undefined;
  if (problem.kind === 'type') return { field: `task.${goldKey}`, message: `${reward.$ref} reads the gold answer at task.${goldKey}: it holds an object, an array or a number that is not finite; give a string, number or boolean` };
  const hint = problem.suggestion !== undefined ? `; did you mean reward.config {"goldKey": ${JSON.stringify(problem.suggestion)}}?` : `; add it, or name the task's key in reward.config.goldKey`;
  return { field: `task.${goldKey}`, message: `${reward.$ref} reads the gold answer at task.${goldKey}, which this task does not have (its keys: ${listKeys(problem.keys)})${hint}` };
}
