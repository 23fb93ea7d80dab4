import { dispatchIdentity, type DispatchRequest, type DispatchSpan, type RolloutContext } from '../../spec/index.js';
import type { WorkerDispatchContext } from './dispatch-types.js';
import { workerArtifacts, type CollectedFiles } from './worker-artifacts.js';
import { workerCostMeter } from './worker-paid-call.js';
import { workerTrace } from './worker-trace.js';

/** One Dispatch attempt's ctx, what it collects, and its clean-up. */
export interface WorkerDispatchAttempt {
  readonly ctx: WorkerDispatchContext;
  readonly collected: CollectedFiles;
  /** Spans the dispatch made (open ones ended now). */
  spans(): DispatchSpan[];
  /** Removes the attempt's artifact directory. */
  remove(): Promise<void>;
}

/**
 * Builds the harness' ctx on the worker from the lease's task (the dispatch request) and the
 * rollout ctx: identity fields; `placement` as the string the caller sent (an object placement's
 * `queue`, if any) with the lease's labels beside it as `placementLabels`; `signal`; `secrets`
 * (the lease's `sandbox.env`); `cost` ({@link workerCostMeter}), `trace` ({@link workerTrace}),
 * `artifacts` ({@link workerArtifacts}, at most `maxArtifactBytes`).
 */
export function workerDispatchContext(request: DispatchRequest, ctx: RolloutContext, maxArtifactBytes: number): WorkerDispatchAttempt {
  const { trace, spans } = workerTrace();
  const { artifacts, collected, remove } = workerArtifacts(maxArtifactBytes);
  const placement = typeof request.placement === 'string' ? request.placement : request.placement?.queue;
  const dispatchCtx: WorkerDispatchContext = {
    ...dispatchIdentity(request),
    placement,
    placementLabels: Object.freeze({ ...ctx.placement }),
    signal: ctx.signal,
    secrets: ctx.secrets,
    cost: workerCostMeter(ctx),
    trace,
    artifacts,
  };
  return { ctx: dispatchCtx, collected, spans, remove };
}
