import type { DispatchSpan } from '../../spec/index.js';
import type { WorkerDispatchTrace } from './dispatch-types.js';
import type { DispatchSpanHandle } from './harness-shapes.js';

type Attributes = Record<string, string | number | boolean>;

/** Attribute values as spans keep them: strings, finite numbers and booleans as they are, anything else as its JSON text (or String). */
function attributeValue(value: unknown): string | number | boolean {
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function attributesOf(raw: unknown): Attributes {
  const out: Attributes = {};
  if (raw === null || typeof raw !== 'object') return out;
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) if (value !== undefined) out[key] = attributeValue(value);
  return out;
}

const errorInfo = (err: unknown): { type: string; message: string } => ({
  type: err instanceof Error ? err.name : typeof err,
  message: err instanceof Error ? err.message : String(err),
});

/**
 * The trace writer of a Dispatch on the worker. `span(name, attributes)` returns the harness'
 * handle (`end`, `setAttribute`, `setStatus`, `recordException`, `addEvent`); the span is kept
 * when it ends. `span(name, fn, attributes)` (a function second) is the older form: it runs `fn`
 * inside the span and ends it when `fn` settles. `spans()` lists what the dispatch leaves: spans
 * still open are ended then, with attribute `rollout-queue.unended: true`. The spans travel back
 * with the Result; the coordinator exports them (OpenTelemetry) and replays them into the caller's
 * `ctx.trace`.
 */
export function workerTrace(): { trace: WorkerDispatchTrace; spans(): DispatchSpan[] } {
  const finished: DispatchSpan[] = [];
  const open = new Set<() => void>();

  const start = (name: string, attributes: unknown): DispatchSpanHandle & { fail(err: unknown): void } => {
    const startMs = Date.now();
    const started = performance.now();
    const attrs = attributesOf(attributes);
    let error: { type: string; message: string } | undefined;
    let ended = false;
    const end = (more?: unknown, unended = false): void => {
      if (ended) return;
      ended = true;
      open.delete(closeUnended);
      Object.assign(attrs, attributesOf(more), unended ? { 'rollout-queue.unended': true } : {});
      finished.push({
        name: String(name),
        startMs,
        durationMs: Math.max(0, performance.now() - started),
        ...(error ? { error } : {}),
        ...(Object.keys(attrs).length > 0 ? { attributes: { ...attrs } } : {}),
      });
    };
    const closeUnended = (): void => end(undefined, true);
    open.add(closeUnended);
    return {
      end: (more) => end(more),
      setAttribute: (key, value) => {
        if (!ended && value !== undefined) attrs[String(key)] = attributeValue(value);
      },
      setStatus: (status) => {
        const code = (status as { code?: unknown; message?: unknown } | null)?.code;
        if (code === 2 || code === 'error') error ??= { type: 'SpanStatus', message: String((status as { message?: unknown }).message ?? 'error') };
      },
      recordException: (err) => {
        error = errorInfo(err);
      },
      addEvent: () => undefined,
      fail: (err) => {
        error = errorInfo(err ?? 'thrown');
      },
    };
  };

  const span = ((name: string, second?: unknown, third?: unknown): unknown => {
    if (typeof second !== 'function') return start(name, second);
    const handle = start(name, third);
    return (async () => {
      try {
        return await (second as () => unknown)();
      } catch (err) {
        handle.fail(err);
        throw err;
      } finally {
        handle.end();
      }
    })();
  }) as WorkerDispatchTrace['span'];

  return {
    trace: { span, flush: () => Promise.resolve() },
    spans: () => {
      for (const close of [...open]) close();
      return finished;
    },
  };
}
