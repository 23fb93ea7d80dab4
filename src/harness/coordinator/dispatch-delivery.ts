import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { safeTaskKey } from '../../lease/index.js';
import type { Logger } from '../../platform/logger.js';
import { DispatchOutputSchema, type CostReceipt, type DispatchOutput, type DispatchSpan, type Result } from '../../spec/index.js';
import type { DispatchContext, DispatchCost } from '../worker/index.js';
import { receiptInputOf } from '../worker/receipt-forms.js';
import { replaySpans } from './dispatch-spans.js';
import { DispatchError, type FinalAnswer } from './dispatch-errors.js';

/**
 * Key of a sink on a call's ctx that takes a delivered dispatch's receipts and spans whole (the
 * gateway answers them in the harness' wire shapes). Internal to the harness seam: a symbol, so
 * no caller's ctx has it by accident.
 */
export const WIRE_SINK = Symbol.for('rollout-queue.dispatch-wire-sink');

/** What {@link WIRE_SINK} collects. */
export interface WireSink {
  readonly receipts: CostReceipt[];
  readonly spans: DispatchSpan[];
}

/** The wire sink of a ctx, if it has one. */
export const wireSinkOf = (ctx: DispatchContext): WireSink | undefined => (ctx as { [WIRE_SINK]?: WireSink })[WIRE_SINK];

/** Receipts already replayed, per coordinator ledger object: replay scope and `callId`. */
const replayed = new WeakMap<object, Set<string>>();

/**
 * Replays one receipt through the harness meter's `runPaidCall`, as the paid call it stands
 * for: `execute` resolves to the Dispatch's own `CostReceiptInput` and `receipt` returns it, so
 * the caller's ledger prices and counts it exactly as an in-process cell's call (a call that
 * failed after paying is replayed as failing, priced by `receiptFromError`). The meter reports a
 * refusal (a callId its ledger holds already, a cost ceiling) as a result, never a throw: logged.
 */
async function replayThroughMeter(receipt: CostReceipt, runPaidCall: NonNullable<DispatchCost['runPaidCall']>, logger: Logger | undefined): Promise<void> {
  const { start, observed } = receiptInputOf(receipt);
  const failed = receipt.paidCall?.error;
  const outcome = await runPaidCall({
    callId: start.callId,
    channel: start.channel,
    actor: start.actor,
    ...(start.model !== undefined ? { model: start.model } : {}),
    ...(start.tags !== undefined ? { tags: { ...start.tags } } : {}),
    execute: async () => {
      if (failed !== undefined) throw new Error(failed);
      return observed;
    },
    receipt: (value) => value,
    receiptFromError: () => observed,
  });
  if (outcome && typeof outcome === 'object' && outcome.succeeded === false && failed === undefined) {
    logger?.warn({ callId: start.callId, err: outcome.error?.message }, "the caller's cost meter refused a replayed receipt (its ledger may hold this callId already)");
  }
}

/**
 * Replays the receipts of one dispatch lease into the caller's `ctx.cost`, once per `callId` of
 * `scope` per meter: through the harness meter's `runPaidCall` (see {@link replayThroughMeter}),
 * else through an older ledger's `record(receipt)`. `scope` names the lease (one cell of one run
 * attempt) and its incarnation (`queueDispatch` counts one more each time the call's keys are
 * deleted without a kept answer, after which the cell runs afresh and pays again). A retried
 * call, or two calls attached to one lease, never count a receipt twice.
 */
export async function replayReceipts(scope: string, receipts: readonly CostReceipt[], cost: DispatchCost | undefined, logger?: Logger): Promise<void> {
  if (!cost || receipts.length === 0) return;
  const runPaidCall = typeof cost.runPaidCall === 'function' ? cost.runPaidCall.bind(cost) : undefined;
  if (!runPaidCall && typeof cost.record !== 'function') return;
  let seen = replayed.get(cost);
  if (!seen) replayed.set(cost, (seen = new Set()));
  for (const receipt of receipts) {
    const key = `${scope}\n${receipt.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (runPaidCall) await replayThroughMeter(receipt, runPaidCall, logger);
    else await cost.record?.({ callId: receipt.id, usd: receipt.usd, ...(receipt.label !== undefined ? { label: receipt.label } : {}), ...(receipt.units !== undefined ? { units: receipt.units } : {}) });
  }
}

/** Writes the files of a dispatch through `ctx.artifacts.write`, else under `runDir`, else drops them. Binary files (base64 on the wire) are written as bytes. */
async function writeFiles(output: DispatchOutput, ctx: DispatchContext, runDir: string | undefined): Promise<void> {
  const binary = new Set(output.binary ?? []);
  const entries = Object.entries(output.files).map(([file, text]) => [file, binary.has(file) ? Buffer.from(text, 'base64') : text] as const);
  if (entries.length === 0) return;
  if (ctx.artifacts && typeof ctx.artifacts.write === 'function') {
    for (const [file, content] of entries) await ctx.artifacts.write(file, content);
    return;
  }
  if (!runDir) return;
  const base = path.resolve(runDir, safeTaskKey(ctx.runAttemptId), safeTaskKey(ctx.cellId));
  for (const [file, content] of entries) {
    const target = path.resolve(base, file);
    // The worker checked the path; check again, the coordinator's disk is at stake.
    if (!target.startsWith(`${base}${path.sep}`)) continue;
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content);
  }
}

/** How a lease's Result is delivered: where receipts replay (`replayScope`), where files go, and whether a failure is the cell's final answer. */
export interface DeliveryOptions {
  readonly runDir: string | undefined;
  readonly replayScope: string;
  readonly final: FinalAnswer | undefined;
  readonly logger: Logger | undefined;
}

/**
 * Turns the Result of a dispatch lease into what the call returns: receipts replayed first
 * (also for a failed dispatch), then for an `ok` Result its spans (exported and replayed into
 * `ctx.trace`), its files and its artifact; any other Result is a {@link DispatchError}:
 * `caller` terminal, `infrastructure` retryable unless `final`, `model` the dispatch's own error.
 */
export async function deliverDispatch(result: Result, ctx: DispatchContext, options: DeliveryOptions): Promise<unknown> {
  wireSinkOf(ctx)?.receipts.push(...result.cost);
  await replayReceipts(options.replayScope, result.cost, ctx.cost, options.logger);
  if (result.kind !== 'ok') {
    // A failed Result always names its error (the Result union; parseResult refuses one without).
    throw new DispatchError(result.kind, result.error, result, options.final);
  }
  const output = DispatchOutputSchema.safeParse(result.output);
  if (!output.success) {
    throw new DispatchError('infrastructure', {
      type: 'BadDispatchOutput',
      message: `lease ${result.leaseId} completed without a dispatchRunner output ({ artifact, files, spans }); the worker ran another run factory`,
    }, result);
  }
  wireSinkOf(ctx)?.spans.push(...output.data.spans);
  replaySpans(output.data.spans, ctx.trace);
  await writeFiles(output.data, ctx, options.runDir);
  return output.data.artifact;
}
