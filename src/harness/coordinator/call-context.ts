import { describeValue } from '../../spec/factory-config.js';
import type { DispatchContext, DispatchTrace } from '../worker/index.js';
import type { DispatchSpanHandle } from '../worker/harness-shapes.js';
import { isCallbackSpan } from '../worker/trace-replay.js';
import { DispatchError } from './dispatch-errors.js';

const callerError = (field: string, problem: string, fix: string): DispatchError =>
  new DispatchError('caller', { type: 'InvalidDispatchContext', message: `dispatch ctx.${field}: ${problem}; ${fix}` });

const isFunction = (value: unknown): value is (...args: unknown[]) => unknown => typeof value === 'function';

/**
 * Refuses a ctx part of an unknown shape before anything is enqueued, as a terminal `caller`
 * error naming the field and the shapes accepted (never a silent default: a meter without
 * `runPaidCall` or `record` would have dropped every receipt). `signal` must be an AbortSignal;
 * `cost` the harness' meter (`runPaidCall(input)`) or a ledger with `record(receipt)`; `trace` a
 * writer with `span`; `artifacts` a writer with `write`.
 * @throws DispatchError (`caller`, type `InvalidDispatchContext`).
 */
export function checkCallContext(ctx: DispatchContext): void {
  const { signal, cost, trace, artifacts } = ctx;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw callerError('signal', `expected an AbortSignal, got ${describeValue(signal)}`, 'pass the cell\'s AbortSignal, or leave it out');
  if (cost !== undefined && (cost === null || typeof cost !== 'object' || (!isFunction(cost.runPaidCall) && !isFunction(cost.record)))) {
    throw callerError('cost', `has neither runPaidCall(input) nor record(receipt), got ${describeValue(cost)}`, "pass the harness' cost meter (its runPaidCall(input) receives every receipt the dispatch paid), a ledger with record(receipt), or leave it out");
  }
  if (trace !== undefined && (trace === null || typeof trace !== 'object' || !isFunction(trace.span))) {
    throw callerError('trace', `has no span function, got ${describeValue(trace)}`, "pass the harness' trace writer (span(name, attributes) returns a handle), or leave it out");
  }
  if (artifacts !== undefined && (artifacts === null || typeof artifacts !== 'object' || !isFunction(artifacts.write))) {
    throw callerError('artifacts', `has no write(path, content) function, got ${describeValue(artifacts)}`, "pass the harness' artifact writer, or leave it out");
  }
}


/**
 * Runs `work` under a span of the caller's trace writer, when it has one. The harness' writer
 * (`span(name, attributes)` returns a handle) gets a span that ends when the work settles, with
 * `error` set when it threw; the older callback form runs `work` inside its span. A harness-form
 * writer whose `span` returns no handle is a `caller` error before `work` starts (the harness
 * itself would have failed on it).
 */
export async function withCallerSpan<T>(trace: DispatchTrace | undefined, name: string, attributes: Readonly<Record<string, string>>, work: () => Promise<T>): Promise<T> {
  if (!trace) return work();
  if (isCallbackSpan(trace.span)) return (trace.span as <R>(n: string, fn: () => Promise<R>, a?: Readonly<Record<string, string>>) => Promise<R>)(name, work, attributes);
  const handle = (trace.span as (n: string, a?: Readonly<Record<string, unknown>>) => DispatchSpanHandle)(name, attributes) as unknown;
  if (handle === null || typeof handle !== 'object' || !isFunction((handle as DispatchSpanHandle).end)) {
    throw callerError('trace.span', `returned ${describeValue(handle)}, not a span handle`, "the harness' trace writer returns { end, setAttribute } from span(name, attributes); a callback form takes (name, fn, attributes)");
  }
  const span = handle as DispatchSpanHandle;
  try {
    const value = await work();
    span.end();
    return value;
  } catch (err) {
    span.end({ error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    throw err;
  }
}
