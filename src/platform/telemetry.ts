import { context, propagation, trace } from '@opentelemetry/api';
import { BullMQOtel } from 'bullmq-otel';

/** Tracer (and BullMQ telemetry) name of rollout-queue's spans. */
export const TRACER_NAME = 'rollout-queue';

/**
 * Whether tracing is on: the `telemetry` option when given, else env `OTEL_EXPORTER_OTLP_ENDPOINT`
 * (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. Spans go to the global OpenTelemetry tracer
 * provider (`@opentelemetry/api`): the application registers one with an OTLP exporter; without
 * one, spans are no-ops.
 */
export function tracingEnabled(option: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  return option ?? Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** BullMQ's `telemetry` option (its maintained OpenTelemetry add-on, bullmq-otel), or undefined when tracing is off. */
export function bullTelemetry(enabled: boolean): BullMQOtel | undefined {
  return enabled ? new BullMQOtel({ tracerName: TRACER_NAME }) : undefined;
}

/** The W3C `traceparent` of the active span (`00-<trace>-<span>-<flags>`), or undefined without one. */
export function activeTraceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/**
 * Runs `fn` inside a span `name` (attributes `attributes`), child of the active context; the span
 * ends when `fn` settles (an error is recorded on it). `fn` gets the span's W3C `traceparent`.
 */
export async function withSpan<T>(name: string, attributes: Record<string, string | number>, fn: (traceparent: string | undefined) => Promise<T>): Promise<T> {
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(activeTraceparent());
    } catch (err) {
      span.recordException(err as Error);
      throw err;
    } finally {
      span.end();
    }
  });
}
