import { context, SpanStatusCode, trace as otel } from '@opentelemetry/api';
import { TRACER_NAME } from '../../platform/telemetry.js';
import type { DispatchSpan } from '../../spec/index.js';
import type { DispatchTrace } from '../worker/index.js';
import { replayIntoTrace } from '../worker/trace-replay.js';

/**
 * Where the spans a Dispatch made on the worker go once its Result is delivered:
 * - exported through OpenTelemetry (the global tracer provider, a no-op without one) as children
 *   of the active span (the call's `rollout-queue.dispatch`, itself a child of the caller's or
 *   the HTTP client's `traceparent`), with the worker's start time and duration;
 * - replayed into the caller's `ctx.trace` ({@link replayIntoTrace}).
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
  replayIntoTrace(spans, trace);
}
