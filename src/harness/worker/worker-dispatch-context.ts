import path from 'node:path';
import { dispatchIdentity, ModelError, type DispatchRequest, type RolloutContext } from '../../spec/index.js';
import type { DispatchContext, DispatchCostReceipt, DispatchSpan, PaidCallCost } from './dispatch-types.js';

/** What the worker-side ctx collected while the dispatch ran. */
export interface Collected {
  readonly files: Record<string, string>;
  readonly spans: DispatchSpan[];
}

const errorInfo = (err: unknown): { type: string; message: string } => ({
  type: err instanceof Error ? err.name : typeof err,
  message: err instanceof Error ? err.message : String(err),
});

/** `a//b` → `a/b`; refuses what would leave the run dir. */
function artifactPath(raw: unknown): string {
  const normalized = typeof raw === 'string' && raw !== '' && !raw.includes('\0') && !path.isAbsolute(raw) ? path.posix.normalize(raw) : '';
  if (normalized === '' || normalized === '.' || normalized.startsWith('../') || normalized === '..' || normalized.endsWith('/')) {
    throw new ModelError('BadArtifactPath', `ctx.artifacts.write: path ${JSON.stringify(raw)} must be a relative file path inside the run dir, like "logs/trace.txt"`);
  }
  return normalized;
}

/**
 * Builds the harness' ctx on the worker from the lease's task and the rollout ctx:
 * - `cost.record` / `cost.runPaidCall` turn receipts into `ctx.recordCost` calls (the worker
 *   stores each in Redis before the promise resolves; `callId` is the receipt id);
 * - `trace.span` times work and collects spans;
 * - `artifacts.write` collects small files, at most `maxArtifactBytes` (UTF-8) in all, else
 *   `ModelError('ArtifactsTooLarge')`.
 */
export function workerDispatchContext(request: DispatchRequest, ctx: RolloutContext, maxArtifactBytes: number): { ctx: DispatchContext; collected: Collected } {
  const collected: Collected = { files: {}, spans: [] };
  let artifactBytes = 0;
  const record = (receipt: DispatchCostReceipt): Promise<void> =>
    ctx.recordCost({
      id: receipt.callId,
      usd: receipt.usd,
      ...(receipt.label !== undefined ? { label: receipt.label } : {}),
      ...(receipt.units !== undefined ? { units: { ...receipt.units } } : {}),
    });
  const priced = (callId: string, cost: PaidCallCost): DispatchCostReceipt => ({ callId, ...cost });
  const placement = typeof request.placement === 'string' ? { queue: request.placement } : (request.placement ?? ctx.placement);
  const dispatchCtx: DispatchContext = {
    ...dispatchIdentity(request),
    placement: Object.freeze({ ...placement }),
    signal: ctx.signal,
    cost: {
      record,
      async runPaidCall<T>(callId: string, call: () => Promise<{ readonly value: T; readonly cost: PaidCallCost }>): Promise<T> {
        let outcome: { readonly value: T; readonly cost: PaidCallCost };
        try {
          outcome = await call();
        } catch (err) {
          const cost = (err as { cost?: PaidCallCost } | null)?.cost;
          if (cost && typeof cost.usd === 'number') await record(priced(callId, cost));
          throw err;
        }
        await record(priced(callId, outcome.cost));
        return outcome.value;
      },
    },
    trace: {
      async span(name, fn, attributes) {
        const startMs = Date.now();
        const started = performance.now();
        const done = (error?: unknown): void => {
          collected.spans.push({
            name,
            startMs,
            durationMs: Math.max(0, performance.now() - started),
            ...(error !== undefined ? { error: errorInfo(error) } : {}),
            ...(attributes ? { attributes: { ...attributes } } : {}),
          });
        };
        try {
          const value = await fn();
          done();
          return value;
        } catch (err) {
          done(err ?? 'thrown');
          throw err;
        }
      },
    },
    artifacts: {
      write(rawPath, content) {
        const where = artifactPath(rawPath);
        if (typeof content !== 'string') throw new ModelError('BadArtifact', `ctx.artifacts.write(${JSON.stringify(where)}): content must be a string, got ${typeof content}`);
        const previous = collected.files[where];
        const bytes = artifactBytes - (previous === undefined ? 0 : Buffer.byteLength(previous)) + Buffer.byteLength(content);
        if (bytes > maxArtifactBytes) {
          throw new ModelError('ArtifactsTooLarge', `ctx.artifacts.write(${JSON.stringify(where)}): the dispatch's files would be ${bytes} bytes, over dispatchRunner's maxArtifactBytes ${maxArtifactBytes}; write large data to shared storage and return its key, or raise maxArtifactBytes`);
        }
        artifactBytes = bytes;
        collected.files[where] = content;
      },
    },
  };
  return { ctx: dispatchCtx, collected };
}
