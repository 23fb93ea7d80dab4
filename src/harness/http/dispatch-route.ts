import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DispatchCostReceipt } from '../worker/index.js';
import type { Logger } from '../../platform/logger.js';
import { DispatchError, type QueueDispatch } from '../coordinator/index.js';
import { dispatchIdentity, DispatchRequestSchema } from '../../spec/index.js';
import { sendError, sendJson } from './http-io.js';

/** HTTP status of each dispatch outcome (the harness' wire, plus 400 for terminal problems). */
export const DISPATCH_STATUS = { ok: 200, caller: 400, clientAborted: 499, model: 500, infrastructure: 503 } as const;

/**
 * `POST /dispatch` with a body already read: `{scenario, cellId, runAttemptId, rep, seed,
 * generation?, placement?, cycleId?}` → one lease keyed by `(runAttemptId, cellId)` through
 * `queueDispatch`, answered:
 * - 200 `{ artifact, costReceipts, files? }`;
 * - 400 `{ error }` for malformed JSON, a missing `runAttemptId`/`cellId`, or a `caller` Result (terminal: do not retry);
 * - 499 when the client went away first (the lease is cancelled);
 * - 500 `{ error: {type, message}, costReceipts }` for a `model` Result (the dispatch's own error);
 * - 503 `{ error, costReceipts }` for `infrastructure` (retry with back-off), also while the gateway shuts down.
 * Receipts ride along on every answer after the dispatch ran, so a client replays them also
 * for a dispatch that failed after paying.
 */
export async function handleDispatch(req: IncomingMessage, res: ServerResponse, body: Buffer, dispatch: QueueDispatch, logger: Logger, closing: () => boolean): Promise<void> {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return sendError(res, 400, 'MalformedJson', `the body is not JSON (${(err as Error).message}); send {"scenario": ..., "cellId": "...", "runAttemptId": "...", "rep": 0, "seed": 0}`);
  }
  const parsed = DispatchRequestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') || '(body)';
    return sendError(res, 400, 'InvalidDispatchRequest', `body field ${field}: ${issue?.message ?? 'invalid'}; send {"scenario": ..., "cellId": "...", "runAttemptId": "...", "rep": 0, "seed": 0}`);
  }
  const request = parsed.data;
  const clientGone = new AbortController();
  // 'close' before our answer means the client hung up: cancel the lease (never on a finished answer).
  res.once('close', () => {
    if (!res.writableFinished) clientGone.abort('client aborted the request');
  });
  const costReceipts: DispatchCostReceipt[] = [];
  const files: Record<string, string> = {};
  try {
    const artifact = await dispatch(request.scenario, {
      ...dispatchIdentity(request),
      ...(request.placement !== undefined ? { placement: request.placement } : {}),
      signal: clientGone.signal,
      cost: { record: (receipt) => void costReceipts.push(receipt) },
      artifacts: { write: (file, content) => void (files[file] = typeof content === 'string' ? content : Buffer.from(content).toString('base64')) },
    });
    sendJson(res, DISPATCH_STATUS.ok, { artifact: artifact ?? null, costReceipts, ...(Object.keys(files).length > 0 ? { files } : {}) });
  } catch (err) {
    if ((err as Error).name === 'AbortError') {
      logger.info({ cellId: request.cellId, runAttemptId: request.runAttemptId }, 'dispatch cancelled: the client went away');
      return sendError(res, DISPATCH_STATUS.clientAborted, 'ClientAborted', 'the client aborted the request; the lease was cancelled', { costReceipts });
    }
    if (closing()) {
      // The gateway's producer closed under the call: say that, not the producer's own words
      // (fresh-user report: "RolloutQueue is closed (state: closing); create a new one").
      return sendError(res, DISPATCH_STATUS.infrastructure, 'GatewayClosing', 'the gateway is shutting down; retry: the lease keeps running, and a retry against its replacement attaches to it', { kind: 'infrastructure', costReceipts }, { 'retry-after': '1' });
    }
    if (err instanceof DispatchError) {
      return sendError(res, DISPATCH_STATUS[err.kind], err.type, err.message, { kind: err.kind, costReceipts });
    }
    logger.error({ err: (err as Error).message, cellId: request.cellId }, 'dispatch failed in the gateway');
    return sendError(res, DISPATCH_STATUS.infrastructure, 'GatewayError', `the gateway could not run the dispatch: ${(err as Error).message}; retry`, { kind: 'infrastructure', costReceipts });
  }
}
