/**
 * How the dashboard shows a rollout job's Result, so failures stand apart from successes in the
 * job list: BullMQ marks every job that returned a Result "completed" (green), whatever its
 * kind, because a `model` or `infrastructure` Result is a report, not a thrown error.
 */
import { shortValue } from './job-data-summary.js';
import { publicText } from './public-text.js';

const KIND_MARK: Readonly<Record<string, string>> = {
  ok: '✔ ok',
  model: '✖ model',
  infrastructure: '⚠ infrastructure',
  caller: '⛔ caller',
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The Result kind of a job's return value, or undefined when it is no Result. */
function kindOf(returnValue: unknown): string | undefined {
  return isRecord(returnValue) && typeof returnValue.kind === 'string' && returnValue.kind in KIND_MARK ? returnValue.kind : undefined;
}

/**
 * bull-board `name` formatter (it receives the job's JSON): `✔ ok · t1 · reward 1`,
 * `✖ model · t2 · TypeError`, `⚠ infrastructure · t3 · ChildCrashed`, `⛔ caller · t4 · RefNotAllowed`;
 * a job without a Result yet keeps its name plus its task id (`rollout · t5`); a failed job
 * (BullMQ `failed`, no Result) shows `✖ failed`.
 */
export function jobName(job: unknown): string {
  if (!isRecord(job)) return 'rollout';
  const data = isRecord(job.data) ? job.data : {};
  const task = isRecord(data.task) ? data.task : {};
  const taskId = typeof task.id === 'string' || typeof task.id === 'number' ? String(task.id).slice(0, 80) : undefined;
  const result = job.returnvalue;
  const kind = kindOf(result);
  if (kind && isRecord(result)) {
    const error = isRecord(result.error) && typeof result.error.type === 'string' ? result.error.type.slice(0, 60) : undefined;
    const detail = kind === 'ok' && typeof result.reward === 'number' ? `reward ${result.reward}` : error;
    return [KIND_MARK[kind], taskId, detail].filter(Boolean).join(' · ');
  }
  const name = typeof job.name === 'string' ? job.name : 'rollout';
  if (typeof job.failedReason === 'string' && job.failedReason !== '') return [`✖ failed`, taskId].filter(Boolean).join(' · ');
  return [name, taskId].filter(Boolean).join(' · ');
}

/**
 * bull-board `returnValue` formatter: a Result with its kind and verdict first, the error
 * message made public ({@link publicText}: no stack, paths or addresses), and the output
 * shortened ({@link shortValue}: long strings cut, secret-looking keys censored). Anything that
 * is no Result is shown through `shortValue` only.
 */
export function resultView(value: unknown): unknown {
  const kind = kindOf(value);
  if (!kind || !isRecord(value)) return shortValue(value);
  const error = isRecord(value.error) ? { type: typeof value.error.type === 'string' ? value.error.type.slice(0, 60) : 'Error', message: publicText(value.error.message) } : null;
  return {
    verdict: KIND_MARK[kind],
    kind,
    reward: value.reward ?? null,
    error,
    taskId: value.taskId,
    attempts: value.attempts,
    redispatched: value.redispatched,
    queuedMs: value.queuedMs,
    runMs: value.runMs,
    finishedAt: value.finishedAt,
    output: shortValue(value.output, 1),
    cost: shortValue(value.cost, 1),
    // Whether the run could read the gold it was scored against (absent from older workers' Results).
    ...(typeof value.goldVisibleToRun === 'boolean' ? { goldVisibleToRun: value.goldVisibleToRun } : {}),
    // What the reward kept with its score (a judge program's details), shortened like the output.
    ...(value.rewardDetails !== undefined ? { rewardDetails: shortValue(value.rewardDetails, 1) } : {}),
  };
}

/**
 * Rewrites bull-board API bodies before they leave: every `failedReason` made public and every
 * `stacktrace` emptied, at any depth (job lists, one job, and error bodies alike).
 */
export function publicApiBody(body: unknown, depth = 0): unknown {
  if (depth > 8 || body === null || typeof body !== 'object') return body;
  if (Array.isArray(body)) return body.map((item) => publicApiBody(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(body)) {
    if (key === 'stacktrace') out[key] = [];
    else if (key === 'failedReason' && typeof item === 'string') out[key] = publicText(item);
    else if ((key === 'details' || key === 'stack') && typeof item === 'string') out[key] = undefined;
    else out[key] = publicApiBody(item, depth + 1);
  }
  return out;
}
