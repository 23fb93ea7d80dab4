import { CallerError, DispatchRequestSchema, isPlainObject, withoutKeys, type DispatchOutput, type Rendered, type RolloutContext, type Task } from '../../spec/index.js';
import { checkedConfigRecord, describeValue } from '../../spec/factory-config.js';
import type { WorkerDispatch } from './dispatch-types.js';
import { setSecretEnv } from './secret-env.js';
import { workerDispatchContext } from './worker-dispatch-context.js';

/** Default of {@link DispatchRunnerOptions.maxArtifactBytes}: 1 MiB. */
export const DEFAULT_MAX_ARTIFACT_BYTES = 1_048_576;
/** Upper bound of {@link DispatchRunnerOptions.maxArtifactBytes}: 64 MiB (files travel inside the Result, in Redis). */
export const MAX_MAX_ARTIFACT_BYTES = 67_108_864;

/** Config of {@link dispatchRunner} (a Ref's config; `dispatch` is a nested Ref, resolved on the worker first). */
export interface DispatchRunnerOptions {
  /** The harness Dispatch to run: a nested Ref `{ "$ref": "module:export", "config": {...} }` whose factory returns `(scenario, ctx) => Promise<artifact>`. */
  readonly dispatch: WorkerDispatch;
  /** Bytes (UTF-8) of all files one dispatch may write with `ctx.artifacts.write`. Default 1 048 576, bounds 0–67 108 864. */
  readonly maxArtifactBytes?: number;
}

const FACTORY = 'dispatchRunner';

/**
 * Run factory `rollout-queue/dispatch:dispatchRunner({ dispatch: Ref, maxArtifactBytes? })`:
 * adapts a harness Dispatch to a rollout. The lease's `task` is the dispatch request
 * (`DispatchRequestSchema`: scenario, cellId, runAttemptId, rep, seed, …); the run builds the
 * harness ctx on the worker (see `workerDispatchContext`), sets the lease's secrets in
 * `process.env` while it runs (`setSecretEnv`), calls `dispatch(task.scenario, ctx)` with the
 * scenario's gold keys removed (`ctx.goldKeys`: the spec's `goldKeys`, which `queueDispatch`'s and
 * the gateway's `goldKeys` option set) and returns `{ artifact, files, binary?, spans }`
 * (`DispatchOutputSchema`). The worker redacts secret values from all of it, as from any Result.
 * A Dispatch that throws is a `model` Result; `InfrastructureError`/`CallerError` classify as usual.
 * @throws CallerError for a bad config (not a Ref in `dispatch`, bad `maxArtifactBytes`) or a task that is not a dispatch request.
 */
export function dispatchRunner(config: unknown): (rendered: Rendered, task: Task, ctx: RolloutContext) => Promise<DispatchOutput> {
  const record = checkedConfigRecord(FACTORY, config, ['dispatch', 'maxArtifactBytes'], 'an object like { "dispatch": { "$ref": "module:export", "config": {} } }');
  const dispatch = record.dispatch;
  if (typeof dispatch !== 'function') {
    throw new CallerError(`${FACTORY}: config.dispatch must be a Ref to a Dispatch factory ({ "$ref": "module:export", "config": {...} }), which the worker resolves to a function; got ${describeValue(dispatch)}`);
  }
  const max = record.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 0 || max > MAX_MAX_ARTIFACT_BYTES) {
    throw new CallerError(`${FACTORY}: config.maxArtifactBytes must be an integer number of bytes from 0 to ${MAX_MAX_ARTIFACT_BYTES}, got ${describeValue(max)}; omit it for the default ${DEFAULT_MAX_ARTIFACT_BYTES}`);
  }
  return async (_rendered, task, ctx) => {
    const parsed = DispatchRequestSchema.safeParse(task);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new CallerError(`${FACTORY}: the task is not a dispatch request (${issue?.path.map(String).join('.') || '(task)'}: ${issue?.message ?? 'invalid'}); enqueue it with queueDispatch or the gateway`);
    }
    const attempt = workerDispatchContext(parsed.data, ctx, max);
    // The scenario is the part of the task the Dispatch sees: the gold keys the worker kept from
    // the task (ctx.goldKeys: the spec's goldKeys, e.g. queueDispatch's) are kept from it too.
    const { scenario } = parsed.data;
    const goldKeys = ctx.goldKeys ?? [];
    const shown = goldKeys.length > 0 && isPlainObject(scenario) ? withoutKeys(scenario, goldKeys) : scenario;
    const restoreEnv = setSecretEnv(ctx.secrets);
    try {
      const artifact = await (dispatch as WorkerDispatch)(shown, attempt.ctx);
      const { files, binary } = attempt.collected;
      return { artifact: artifact ?? null, files, ...(binary.length > 0 ? { binary } : {}), spans: attempt.spans() };
    } finally {
      restoreEnv();
      await attempt.remove();
    }
  };
}

/** Reward factory `rollout-queue/dispatch:noReward`: a dispatch is judged by the harness, not here; always 0. */
export function noReward(): () => number {
  return () => 0;
}
