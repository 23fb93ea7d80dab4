import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { safeTaskKey } from '../../lease/index.js';
import { DispatchOutputSchema, type CostReceipt, type Result } from '../../spec/index.js';
import type { DispatchContext, DispatchCost } from '../worker/index.js';
import { DispatchError } from './dispatch-errors.js';

/** Receipts already replayed, per coordinator ledger object: replay scope and `callId`. */
const replayed = new WeakMap<object, Set<string>>();

/**
 * Replays the receipts of one dispatch lease into the caller's `ctx.cost`, once per `callId` of
 * `scope` per ledger: `scope` names the lease (one cell of one run attempt) and its incarnation
 * (`queueDispatch` counts one more each time the call's keys are deleted without a kept answer,
 * after which the cell runs afresh and pays again). A retried call, or two calls attached to one
 * lease, never count a receipt twice. A `callId` is the Dispatch's own name of a paid call within
 * its cell, so one ledger shared by every cell gets `call-1` of each cell (fresh-user report:
 * only the first cell's `call-1` reached a shared ledger).
 */
export async function replayReceipts(scope: string, receipts: readonly CostReceipt[], cost: DispatchCost | undefined): Promise<void> {
  if (!cost || typeof cost.record !== 'function' || receipts.length === 0) return;
  let seen = replayed.get(cost);
  if (!seen) replayed.set(cost, (seen = new Set()));
  for (const receipt of receipts) {
    const key = `${scope}\n${receipt.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    await cost.record({
      callId: receipt.id,
      usd: receipt.usd,
      ...(receipt.label !== undefined ? { label: receipt.label } : {}),
      ...(receipt.units !== undefined ? { units: receipt.units } : {}),
    });
  }
}

/** Writes the files of a dispatch through `ctx.artifacts.write`, else under `runDir`, else drops them. */
async function writeFiles(files: Readonly<Record<string, string>>, ctx: DispatchContext, runDir: string | undefined): Promise<void> {
  const entries = Object.entries(files);
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

/**
 * Turns the Result of a dispatch lease into what the call returns: receipts replayed first
 * (also for a failed dispatch; `replayScope` as {@link replayReceipts}' scope), then the artifact of an `ok` Result (its files written), or a
 * {@link DispatchError}: `caller` terminal, `infrastructure` retryable, `model` the dispatch's own error.
 */
export async function deliverDispatch(result: Result, ctx: DispatchContext, runDir: string | undefined, replayScope: string = result.leaseId): Promise<unknown> {
  await replayReceipts(replayScope, result.cost, ctx.cost);
  if (result.kind !== 'ok') {
    throw new DispatchError(result.kind, result.error ?? { type: 'Unknown', message: `the dispatch ended as ${result.kind} without an error` }, result);
  }
  const output = DispatchOutputSchema.safeParse(result.output);
  if (!output.success) {
    throw new DispatchError('infrastructure', {
      type: 'BadDispatchOutput',
      message: `lease ${result.leaseId} completed without a dispatchRunner output ({ artifact, files, spans }); the worker ran another run factory`,
    }, result);
  }
  await writeFiles(output.data.files, ctx, runDir);
  return output.data.artifact;
}
