import { context, SpanStatusCode, trace as otel } from '@opentelemetry/api';
import { TRACER_NAME } from '../../platform/telemetry.js';
import type { DispatchSpan } from '../../spec/index.js';
import type { DispatchTrace } from '../worker/index.js';
import type { DispatchSpanHandle } from '../worker/harness-shapes.js';
import { isCallbackSpan } from './call-context.js';

/**
 * Where the spans a Dispatch made on the worker go once its Result is delivered:
 * - exported through OpenTelemetry (the global tracer provider, a no-op without one) as children
 *   of the active span (the call's `rollout-queue.dispatch`, itself a child of the caller's or
 *   the HTTP client's `traceparent`), with the worker's start time and duration;
 * - replayed into the caller's `ctx.trace`: the harness' writer gets `span(name, attributes)`
 *   ended at once, the attributes carrying `rollout-queue.startMs` and `rollout-queue.durationMs`
 *   (its writer stamps its own clock); the older callback form gets an empty callback.
 * A writer that throws loses its copy of the spans, never the call's artifact.
 */
export function replaySpans(spans: readonly DispatchSpan[], trace: DispatchTrace | undefined): void {
  if (spans.length === 0) return;
  const tracer = otel.getTracer(TRACER_NAME);
  const parent = context.active();
  for (const span of spans) {
    const exported = tracer.startSpan(span.name, { startTime: span.startMs, ...(span.attributes ? { attributes: span.attributes } : {}) }, parent);
    if (span.error) exported.setStatus({ code: SpanStatusCode.ERROR, message: `${span.error.type}: ${span.error.message}` });
    exported.end(span.startMs + span.durationMs);
  }
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
