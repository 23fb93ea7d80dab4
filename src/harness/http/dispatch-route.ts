import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation } from '@opentelemetry/api';
import type { Logger } from '../../platform/logger.js';
import { dispatchIdentity, DispatchRequestSchema, type CostReceipt, type DispatchSpan } from '../../spec/index.js';
import { DispatchError, WIRE_SINK, type FinalAnswer, type QueueDispatch, type WireSink } from '../coordinator/index.js';
import { harnessReceiptOf } from '../worker/receipt-forms.js';
import { sendError, sendJson } from './http-io.js';
import { FINAL_HEADER, finalHeaderValue } from './wire.js';

/** HTTP status of each dispatch outcome (the harness' wire, plus 400 for terminal problems). */
export const DISPATCH_STATUS = { ok: 200, caller: 400, clientAborted: 499, model: 500, infrastructure: 503 } as const;

/** What the gateway logs and counts of one `POST /dispatch`. */
export interface DispatchOutcome {
  readonly status: number;
  readonly cellId: string | undefined;
  /** Executions of the cell when a kept final answer was sent. */
  readonly final: FinalAnswer | undefined;
}

/** The receipts of a dispatch in both wire forms: the harness' `CostReceipt` (`receipts`) and the older `{callId, usd, label?, units?}` (`costReceipts`). */
function receiptFields(receipts: readonly CostReceipt[]): { receipts: unknown[]; costReceipts: unknown[] } {
  const now = Date.now();
  const unique = [...new Map(receipts.map((receipt) => [receipt.id, receipt])).values()];
  return {
    receipts: unique.map((receipt) => harnessReceiptOf(receipt, now)),
    costReceipts: unique.map((receipt) => ({ callId: receipt.id, usd: receipt.usd, ...(receipt.label !== undefined ? { label: receipt.label } : {}), ...(receipt.units !== undefined ? { units: receipt.units } : {}) })),
  };
}

/** The files a dispatch wrote, as the wire carries them: UTF-8 text, or base64 for bytes (listed in `binary`). */
function fileFields(files: ReadonlyMap<string, string | Uint8Array>): Record<string, unknown> {
  if (files.size === 0) return {};
  const out: Record<string, string> = {};
  const binary: string[] = [];
  for (const [file, content] of files) {
    if (typeof content === 'string') out[file] = content;
    else {
      out[file] = Buffer.from(content).toString('base64');
      binary.push(file);
    }
  }
  return { files: out, ...(binary.length > 0 ? { binary } : {}) };
}

const spanFields = (spans: readonly DispatchSpan[]): Record<string, unknown> => (spans.length > 0 ? { spans } : {});

/**
 * `POST /dispatch` with a body already read: `{scenario, cellId, runAttemptId, rep, seed,
 * generation?, placement?, cycleId?}` → one lease keyed by `(runAttemptId, cellId)` through
 * `queueDispatch`, run in the trace context of the request's `traceparent` header (W3C; the
 * dispatch's spans nest under the client's), answered:
 * - 200 `{ artifact, receipts, costReceipts, files?, binary?, spans? }`: `receipts` in the harness'
 *   `CostReceipt` shape (replay each through the coordinator meter's `runPaidCall`), `costReceipts`
 *   the same calls as `{ callId, usd, label?, units? }` (older clients, the Python client);
 * - 400 `{ error }` for malformed JSON, a missing `runAttemptId`/`cellId`, or a `caller` Result (terminal: do not retry);
 * - 499 when the client went away first (the lease is cancelled);
 * - 500 `{ error: {type, message}, kind, receipts, costReceipts, final }` for a `model` Result (the dispatch's own error);
 * - 503 `{ error, kind, receipts, costReceipts, final? }` for `infrastructure`: retry with back-off,
 *   unless `final` is set.
 * `final` (also header `x-rollout-queue-final: executions=N; kept-until=ISO`) marks the cell's kept
 * answer: the Dispatch ran `final.executions` times (for a transient: the plane's re-dispatch
 * budget) and a retry of the same cell attempt gets this same answer until `final.keptUntilMs`,
 * without another run; a new `runAttemptId` runs it afresh.
 * Receipts ride along on every answer after the dispatch ran, so a client replays them also
 * for a dispatch that failed after paying.
 */
export async function handleDispatch(req: IncomingMessage, res: ServerResponse, body: Buffer, dispatch: QueueDispatch, logger: Logger, closing: () => boolean): Promise<DispatchOutcome> {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch (err) {
    sendError(res, 400, 'MalformedJson', `the body is not JSON (${(err as Error).message}); send {"scenario": ..., "cellId": "...", "runAttemptId": "...", "rep": 0, "seed": 0}`);
    return { status: 400, cellId: undefined, final: undefined };
  }
  const parsed = DispatchRequestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') || '(body)';
    sendError(res, 400, 'InvalidDispatchRequest', `body field ${field}: ${issue?.message ?? 'invalid'}; send {"scenario": ..., "cellId": "...", "runAttemptId": "...", "rep": 0, "seed": 0}`);
    return { status: 400, cellId: (raw as { cellId?: unknown } | null)?.cellId as string | undefined, final: undefined };
  }
  const request = parsed.data;
  const { cellId } = request;
  const clientGone = new AbortController();
  // 'close' before our answer means the client hung up: cancel the lease (never on a finished answer).
  res.once('close', () => {
    if (!res.writableFinished) clientGone.abort('client aborted the request');
  });
  const sink: WireSink = { receipts: [], spans: [] };
  const files = new Map<string, string | Uint8Array>();
  const answer = (status: number, payload: Record<string, unknown>, headers: Record<string, string> = {}, final?: FinalAnswer): DispatchOutcome => {
    sendJson(res, status, { ...payload, ...receiptFields(sink.receipts) }, headers);
    return { status, cellId, final };
  };
  // The client's trace context (W3C traceparent/tracestate headers) around the whole call.
  const parent = propagation.extract(context.active(), req.headers);
  try {
    const artifact = await context.with(parent, () => dispatch(request.scenario, {
      ...dispatchIdentity(request),
      ...(request.placement !== undefined ? { placement: request.placement } : {}),
      signal: clientGone.signal,
      artifacts: { write: (file: string, content: string | Uint8Array) => void files.set(file, content) },
      [WIRE_SINK]: sink,
    } as Parameters<QueueDispatch>[1]));
    return answer(DISPATCH_STATUS.ok, { artifact: artifact ?? null, ...fileFields(files), ...spanFields(sink.spans) });
  } catch (err) {
    if ((err as Error).name === 'AbortError') {
      logger.info({ cellId, runAttemptId: request.runAttemptId }, 'dispatch cancelled: the client went away');
      return answer(DISPATCH_STATUS.clientAborted, { error: { type: 'ClientAborted', message: 'the client aborted the request; the lease was cancelled' } });
    }
    if (closing()) {
      // The gateway's producer closed under the call: say that, not the producer's own words
      // (fresh-user report: "RolloutQueue is closed (state: closing); create a new one").
      return answer(DISPATCH_STATUS.infrastructure, { error: { type: 'GatewayClosing', message: 'the gateway is shutting down; retry: the lease keeps running, and a retry against its replacement (or another gateway of the queue) attaches to it' }, kind: 'infrastructure' }, { 'retry-after': '1' });
    }
    if (err instanceof DispatchError) {
      const final = err.final;
      return answer(DISPATCH_STATUS[err.kind], { error: { type: err.type, message: err.message }, kind: err.kind, ...(final ? { final } : {}) }, final ? { [FINAL_HEADER]: finalHeaderValue(final) } : {}, final);
    }
    logger.error({ err: (err as Error).message, cellId }, 'dispatch failed in the gateway');
    return answer(DISPATCH_STATUS.infrastructure, { error: { type: 'GatewayError', message: `the gateway could not run the dispatch: ${(err as Error).message}; retry` }, kind: 'infrastructure' });
  }
}
