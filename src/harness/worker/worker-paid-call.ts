import { randomUUID } from 'node:crypto';
import { CallerError, type CostReceipt, type RolloutContext } from '../../spec/index.js';
import { describeValue } from '../../spec/factory-config.js';
import type { DispatchCostReceipt, PaidCallCost, WorkerDispatchCost } from './dispatch-types.js';
import type { PaidCallResult, RunPaidCallInput } from './harness-shapes.js';
import { harnessReceiptOf, receiptFromInput, receiptInputProblem, unknownReceiptInput, type PaidCallStart } from './receipt-forms.js';

const USAGE = "ctx.cost.runPaidCall takes the harness' input object { callId?, channel?, actor, model?, execute(signal, callId), receipt(value), receiptFromError?(error) }, or (callId, async () => ({ value, cost: { usd } }))";

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));

/** The first problem of a `runPaidCall(input)` argument, or undefined: a Dispatch bug, the same on every try. */
function inputProblem(input: Record<string, unknown>): string | undefined {
  if (typeof input.execute !== 'function') return `execute must be a function (signal, callId) => Promise<value>, got ${describeValue(input.execute)}`;
  if (typeof input.receipt !== 'function') return `receipt must be a function (value) => { model, inputTokens, outputTokens, actualCostUsd? }, got ${describeValue(input.receipt)}`;
  if (typeof input.actor !== 'string' || input.actor.length === 0 || input.actor.length > 256) return `actor must be a string of 1 to 256 characters naming who pays (e.g. "solver"), got ${describeValue(input.actor)}`;
  if (input.callId !== undefined && (typeof input.callId !== 'string' || input.callId.length === 0 || input.callId.length > 256)) return `callId must be a string of 1 to 256 characters, or left out for a random one, got ${describeValue(input.callId)}`;
  if (input.channel !== undefined && (typeof input.channel !== 'string' || input.channel.length === 0 || input.channel.length > 64)) return `channel must be a string of 1 to 64 characters (agent, judge, ...), got ${describeValue(input.channel)}`;
  if (input.receiptFromError !== undefined && typeof input.receiptFromError !== 'function') return `receiptFromError must be a function (error) => receipt | undefined, got ${describeValue(input.receiptFromError)}`;
  return undefined;
}

/**
 * The cost meter of a Dispatch on the worker ({@link WorkerDispatchCost}): every receipt goes
 * through `ctx.recordCost` of the rollout, which resolves once the worker stored it in Redis.
 * A `callId` paid once in this dispatch is refused the second time (the harness ledger's
 * conflict), reported as a failure, not thrown. The harness' `maximumCharge` is accepted and not
 * enforced here: the coordinator's ledger holds the ceiling.
 */
export function workerCostMeter(ctx: RolloutContext): WorkerDispatchCost {
  const paid = new Set<string>();
  const store = (receipt: CostReceipt): Promise<void> => ctx.recordCost(receipt);
  const record = (receipt: DispatchCostReceipt): Promise<void> =>
    store({
      id: receipt.callId,
      usd: receipt.usd,
      ...(receipt.label !== undefined ? { label: receipt.label } : {}),
      ...(receipt.units !== undefined ? { units: { ...receipt.units } } : {}),
    });

  /** The older `(callId, call)` form: resolves to the value; an error carrying `cost` is recorded, then re-thrown. */
  async function byCallback<T>(callId: string, call: () => Promise<{ readonly value: T; readonly cost: PaidCallCost }>): Promise<T> {
    let outcome: { readonly value: T; readonly cost: PaidCallCost };
    try {
      outcome = await call();
    } catch (err) {
      const cost = (err as { cost?: PaidCallCost } | null)?.cost;
      if (cost && typeof cost.usd === 'number') await record({ callId, ...cost });
      throw err;
    }
    await record({ callId, ...outcome.cost });
    return outcome.value;
  }

  /** The harness' form: `execute`, then `receipt(value)` (or `receiptFromError`), stored before it resolves. */
  async function byInput<T>(input: RunPaidCallInput<T>): Promise<PaidCallResult<T>> {
    const problem = inputProblem(input as unknown as Record<string, unknown>);
    if (problem !== undefined) throw new CallerError(`ctx.cost.runPaidCall: ${problem}; ${USAGE}`);
    const start: PaidCallStart = {
      callId: input.callId ?? randomUUID(),
      channel: input.channel ?? 'agent',
      actor: input.actor,
      ...(input.phase !== undefined ? { phase: String(input.phase) } : {}),
      ...(input.model !== undefined ? { model: String(input.model) } : {}),
      ...(input.tags !== undefined ? { tags: { ...input.tags } } : {}),
      timestamp: Date.now(),
    };
    const { callId } = start;
    if (paid.has(callId)) return { succeeded: false, callId, error: new Error(`ctx.cost.runPaidCall: callId '${callId}' already exists in this dispatch; give each paid call its own callId, or leave it out for a random one`) };
    const signal = input.signal ? AbortSignal.any([ctx.signal, input.signal]) : ctx.signal;
    if (signal.aborted) return { succeeded: false, callId, error: asError(signal.reason ?? new Error('aborted')) };
    paid.add(callId);
    const settle = async (observed: unknown, error?: Error): Promise<CostReceipt> => {
      const problem = receiptInputProblem(observed);
      const receipt = problem === undefined
        ? receiptFromInput(start, observed as Parameters<typeof receiptFromInput>[1], error?.message)
        : receiptFromInput(start, unknownReceiptInput(start.model ?? 'unknown'), error?.message ?? `receipt: ${problem}`);
      await store(receipt);
      return receipt;
    };
    let value: T;
    try {
      value = await input.execute(signal, callId);
    } catch (thrown) {
      const error = asError(thrown);
      let observed: unknown;
      try {
        observed = input.receiptFromError?.(error);
      } catch {
        observed = undefined;
      }
      const receipt = await settle(observed ?? unknownReceiptInput(start.model ?? 'unknown'), error);
      return { succeeded: false, callId, error, receipt: harnessReceiptOf(receipt, start.timestamp) };
    }
    let observed: unknown;
    try {
      observed = input.receipt(value);
    } catch (thrown) {
      const error = asError(thrown);
      const receipt = await settle(unknownReceiptInput(start.model ?? 'unknown'), error);
      return { succeeded: false, callId, error, receipt: harnessReceiptOf(receipt, start.timestamp) };
    }
    const problemOfReceipt = receiptInputProblem(observed);
    const receipt = await settle(observed);
    if (problemOfReceipt !== undefined) {
      // The harness ledger refuses such a receipt the same way: the call is reported failed, its cost unknown.
      return { succeeded: false, callId, error: new Error(`ctx.cost.runPaidCall: receipt(value) of call '${callId}': ${problemOfReceipt}`), receipt: harnessReceiptOf(receipt, start.timestamp) };
    }
    return { succeeded: true, callId, value, receipt: harnessReceiptOf(receipt, start.timestamp) };
  }

  const runPaidCall = ((first: unknown, second?: unknown): Promise<unknown> => {
    if (typeof first === 'string') {
      if (typeof second !== 'function') return Promise.reject(new CallerError(`ctx.cost.runPaidCall("${first}", …): the second argument must be a function returning { value, cost }, got ${describeValue(second)}; ${USAGE}`));
      return byCallback(first, second as () => Promise<{ value: unknown; cost: PaidCallCost }>);
    }
    if (first !== null && typeof first === 'object' && !Array.isArray(first)) return byInput(first as RunPaidCallInput<unknown>);
    return Promise.reject(new CallerError(`ctx.cost.runPaidCall: got ${describeValue(first)}; ${USAGE}`));
  }) as WorkerDispatchCost['runPaidCall'];
  return { runPaidCall, record };
}
