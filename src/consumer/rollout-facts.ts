import type { RolloutSpec, SecretValues } from '../spec/index.js';

export { warnShortSecrets } from './short-secret-warning.js';

/**
 * Small facts the rollout processor reads off a spec or an output: the secrets to redact, the
 * task id, a truncated output, a coordinator deadline near, the back-off before a re-dispatch.
 */

/**
 * How close to a coordinator deadline (`scheduleToStartMs`, `scheduleToCloseMs`, from enqueue) an
 * attempt must finish to ask Redis whether the coordinator already ended its lease, ms: covers
 * the error of the extrapolated Redis clock (half a round trip plus drift), with room to spare.
 */
export const VERDICT_MARGIN_MS = 2_000;

/** The last `bytes` characters of a child's stderr, for logs and the lease record. */
export const tail = (text: string, bytes = 2000): string => (text.length > bytes ? text.slice(-bytes) : text);

/** True when `sinceEnqueueMs` is within {@link VERDICT_MARGIN_MS} of (or past) a coordinator deadline of the spec. */
export function nearDeadline(spec: RolloutSpec, sinceEnqueueMs: number): boolean {
  const { scheduleToStartMs, scheduleToCloseMs } = spec.timeouts;
  const near = (limitMs: number | undefined): boolean => limitMs !== undefined && limitMs > 0 && sinceEnqueueMs >= limitMs - VERDICT_MARGIN_MS;
  return near(scheduleToStartMs) || near(scheduleToCloseMs);
}

/** Longest back-off before a transient re-dispatch, ms. */
const MAX_BACKOFF_MS = 30_000;

/** `baseMs × 2^n` with equal jitter (half of it random), capped at {@link MAX_BACKOFF_MS}. */
export function backoffMs(baseMs: number, redispatched: number): number {
  const full = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** redispatched);
  return Math.round(full / 2 + Math.random() * (full / 2));
}

/** Values of the spec's `sandbox.env` names that this worker has (those it lacks cannot leak). */
export function secretsOf(spec: RolloutSpec): SecretValues {
  const values: Record<string, string> = {};
  for (const name of spec.sandbox.env) {
    const value = process.env[name];
    if (value !== undefined) values[name] = value;
  }
  return values;
}

/** True when a runner says it dropped part of the output (`codeRunner`'s `stdoutTruncated`/`stderrTruncated`). */
export function isTruncatedOutput(output: unknown): boolean {
  if (output === null || typeof output !== 'object') return false;
  const { stdoutTruncated, stderrTruncated } = output as { stdoutTruncated?: unknown; stderrTruncated?: unknown };
  return stdoutTruncated === true || stderrTruncated === true;
}

/** `task.id` as a string, else the task key part of the lease id. */
export function taskIdOf(spec: RolloutSpec): string {
  const id = spec.task.id;
  if (typeof id === 'string' || typeof id === 'number') return String(id);
  return spec.leaseId.slice(spec.runId.length + 1);
}
