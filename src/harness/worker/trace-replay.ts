import type { DispatchSpan } from '../../spec/index.js';
import type { DispatchTrace } from './dispatch-types.js';
import type { DispatchSpanHandle } from './harness-shapes.js';

/** True for rollout-queue's older callback form `span(name, fn, attributes)`: a span function declaring three parameters. */
export const isCallbackSpan = (span: DispatchTrace['span']): boolean => span.length >= 3;

/**
 * Replays spans a Dispatch made on the worker into a caller's trace writer: the harness' writer
 * gets `span(name, attributes)` ended at once, the attributes carrying `rollout-queue.startMs` and
 * `rollout-queue.durationMs` (its writer stamps its own clock) and `error` for a failed span; the
 * older callback form gets an empty callback. A writer that throws loses its copy of a span,
 * never the call's artifact. Type-only imports: the HTTP client uses it without zod.
 */
export function replayIntoTrace(spans: readonly DispatchSpan[], trace: DispatchTrace | undefined): void {
  if (!trace) return;
  for (const span of spans) {
    const attributes = { ...span.attributes, 'rollout-queue.startMs': span.startMs, 'rollout-queue.durationMs': span.durationMs, ...(span.error ? { error: `${span.error.type}: ${span.error.message}` } : {}) };
    try {
      if (isCallbackSpan(trace.span)) void (trace.span as (n: string, fn: () => undefined, a: object) => Promise<unknown>)(span.name, () => undefined, attributes).catch(() => undefined);
      else ((trace.span as (n: string, a: object) => DispatchSpanHandle)(span.name, attributes) as DispatchSpanHandle | undefined)?.end?.();
    } catch {
      // The caller's writer failed on a replayed span: its trace misses it, the call goes on.
    }
  }
}
