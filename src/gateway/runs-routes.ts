import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../platform/logger.js';
import { checkRunWeight, DuplicateLeaseError, firstRefusedDraft, refuseRepeatedLeases, type RolloutDraft, type RolloutQueue } from '../producer/index.js';
import { canonicalJson, RunIdSchema } from '../spec/index.js';
import { sendError, sendJson } from '../harness/http/http-io.js';
import { builtinRefRefusal } from './builtin-ref-check.js';
import { ENDED_STATES, type RunLog } from './run-log.js';
import { RunPump } from './run-pump.js';

/** How often a results stream re-reads the log when no in-process append woke it (a run pumped by another gateway), ms. */
const STREAM_POLL_MS = 1000;
/**
 * How long a results stream of a running run that no pump here delivers waits for another
 * gateway's pump to hold the run's coordinator lease, ms (a pump sets the run `running` just
 * before its session takes the lease), polling every {@link LEASE_POLL_MS}.
 */
const LEASE_GRACE_MS = 2000;
const LEASE_POLL_MS = 100;

/** What a client that reads a run nobody delivers is told (fresh-user report: its stream hung until the drafts were posted again). */
const notDeliveredText = (runId: string): string =>
  `run "${runId}" is running but no gateway is delivering its Results (the gateway that ran it restarted or stopped); POST /runs again with the same runId and drafts to resume it, then read again`;

/**
 * True when a pump here or a coordinator session elsewhere delivers the run, or the run has
 * ended (its log is complete), waiting up to {@link LEASE_GRACE_MS} for one of them.
 */
async function delivered(runId: string, deps: RunsDeps): Promise<boolean> {
  const deadline = Date.now() + LEASE_GRACE_MS;
  for (;;) {
    if (deps.pumps.has(runId) || (await deps.log.delivering(runId))) return true;
    const state = (await deps.log.head(runId))?.state;
    if (state !== null && state !== undefined && ENDED_STATES.has(state)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, LEASE_POLL_MS));
  }
}

/** What the runs routes share with the gateway. */
export interface RunsDeps {
  readonly rq: RolloutQueue;
  readonly log: RunLog;
  readonly logger: Logger;
  readonly pumps: Map<string, RunPump>;
  readonly closing: () => boolean;
}

/**
 * `POST /runs` `{ runId, drafts: [RolloutDraft...], weight? }` (weight: the run's fair share,
 * 0.01–100, default 1, docs/fair-share.md; drafts as in schema/rollout-spec.json
 * without `v`, `leaseId`, `runId`, `runAttemptId`) → 202 `{ runId, state }`. Starts the run, or
 * resumes it after a gateway restart (posting the same drafts again enqueues nothing twice);
 * a run already pumping here, or ended, is left as it is. 400 before anything is enqueued for a
 * bad runId, no drafts, two drafts naming one lease, or a draft the producer would refuse; 409
 * `RunConflict` for drafts other than those the run id was first posted with (their sha256 is
 * kept in the run's log).
 */
export async function postRun(res: ServerResponse, body: unknown, deps: RunsDeps): Promise<void> {
  const record = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  const runId = RunIdSchema.safeParse(record?.runId);
  if (!runId.success) return sendError(res, 400, 'InvalidRunRequest', `body field runId: ${runId.error.issues[0]?.message ?? 'invalid'}; send {"runId": "...", "drafts": [...]}`);
  if (!Array.isArray(record?.drafts) || record.drafts.length === 0) {
    return sendError(res, 400, 'InvalidRunRequest', 'body field drafts: must be a non-empty array of rollout drafts (see schema/rollout-spec.json); send {"runId": "...", "drafts": [...]}');
  }
  const id = runId.data;
  let weight: number;
  try {
    weight = checkRunWeight(record.weight, 'body field weight');
  } catch (err) {
    return sendError(res, 400, 'InvalidRunRequest', `${(err as Error).message}; omit it for an equal share`);
  }
  try {
    refuseRepeatedLeases(id, record.drafts);
  } catch (err) {
    if (!(err instanceof DuplicateLeaseError)) throw err;
    return sendError(res, 400, 'InvalidRunRequest', `body field drafts: ${err.message}`);
  }
  // Fresh-user report: a draft without run/reward got 202, then a caller Result whose end line
  // advised a library option (stopOnCaller) an HTTP client cannot set.
  const refused = firstRefusedDraft(id, record.drafts, deps.rq.options);
  if (refused) return sendError(res, 400, 'InvalidRunRequest', `body field drafts[${refused.index}]: ${refused.error.type}: ${refused.error.message}; nothing was enqueued`);
  for (const [index, draft] of record.drafts.entries()) {
    const builtin = builtinRefRefusal(draft);
    if (builtin) return sendError(res, 400, 'InvalidRunRequest', `body field drafts[${index}].${builtin.field}: ${builtin.message}; nothing was enqueued`);
  }
  // Fresh-user report: other drafts under a run id in use got 202 and were dropped unseen.
  const fingerprint = createHash('sha256').update(canonicalJson(record.drafts)).digest('hex');
  const recorded = await deps.log.claimDrafts(id, fingerprint);
  if (recorded !== fingerprint) {
    return sendError(res, 409, 'RunConflict', `run "${id}" was posted before with other drafts (sha256 ${recorded.slice(0, 12)}…, this request's ${fingerprint.slice(0, 12)}…); nothing was enqueued: post the same drafts to resume that run, or these drafts under a new runId`);
  }
  const head = await deps.log.head(id);
  // Checked again after the await, and the pump registered in the same tick: two posts at once start one pump.
  if (!deps.pumps.has(id) && !(head && ENDED_STATES.has(head.state ?? 'running') && head.state !== 'failed')) {
    const pump = new RunPump(deps.rq, deps.log, deps.logger, id, record.drafts as RolloutDraft[], weight);
    deps.pumps.set(id, pump);
    void pump.done.finally(() => deps.pumps.get(id) === pump && deps.pumps.delete(id));
  }
  sendJson(res, 202, { runId: id, state: (await deps.log.head(id))?.state ?? 'running' });
}

/**
 * `GET /runs/ID` → 200 `{ runId, state, error, results, ackedThrough, run, cost }` (run = the run
 * record, cost = the receipts workers stored for its leases, as `status` counts them), 404 when
 * unknown. A dispatch run (`dispatch-…`, see `dispatchRunId`) has no runs-API state: `state` is null.
 */
export async function getRun(res: ServerResponse, runId: string, deps: RunsDeps): Promise<void> {
  const [head, status] = await Promise.all([deps.log.head(runId), deps.rq.status(runId)]);
  if (!head && !status.run) return sendError(res, 404, 'NoSuchRun', `no run "${runId}" on queue "${status.queue}"; POST /runs first`);
  sendJson(res, 200, { runId, state: head?.state ?? null, error: head?.error ?? null, results: head?.count ?? 0, ackedThrough: head?.ackedThrough ?? 0, run: status.run ?? null, cost: status.cost ?? null });
}

/**
 * `POST /runs/ID/ack` `{ "count": N }` → 200 `{ runId, ackedThrough }`: the client has consumed
 * the first N Results of the stream, so a client that restarts (even after kill -9) and reads
 * without `after` starts at N and sees none of them again. The cursor only moves forward (an
 * older, smaller N is ignored). 400 when `count` is not a whole number from 0 to the Results
 * listed, 404 for an unknown run.
 */
export async function acknowledgeRoute(res: ServerResponse, runId: string, body: unknown, deps: RunsDeps): Promise<void> {
  const head = await deps.log.head(runId);
  if (!head) return sendError(res, 404, 'NoSuchRun', `no run "${runId}" in this gateway's log; POST /runs first`);
  const count = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>).count : undefined;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > head.count) {
    return sendError(res, 400, 'InvalidAck', `body field count: ${JSON.stringify(count ?? null)} must be a whole number from 0 to ${head.count} (the Results listed so far): the number of Results the client has consumed; send {"count": N}`);
  }
  await deps.log.acknowledge(runId, count);
  sendJson(res, 200, { runId, ackedThrough: Math.max(count, head.ackedThrough) });
}

/**
 * `POST /runs/ID/cancel` → 200 `{ runId, removed, workersNotified }`; for a run already completed
 * or cancelled, 200 `{ runId, removed: 0, workersNotified: 0, alreadyEnded: status }` and nothing
 * is told to workers (as the CLI's "already completed: nothing to cancel"); 404 when unknown.
 */
export async function cancelRunRoute(res: ServerResponse, runId: string, deps: RunsDeps): Promise<void> {
  const ended = (await deps.rq.status(runId)).run?.status;
  if (ended === 'completed' || ended === 'cancelled') return sendJson(res, 200, { runId, removed: 0, workersNotified: 0, alreadyEnded: ended });
  try {
    const outcome = await deps.rq.cancel(runId, 'cancelled through the gateway');
    const head = await deps.log.head(runId);
    // A pump here ends itself as cancelled; a run nobody pumps is marked so its streams end.
    if (!deps.pumps.has(runId) && head && !ENDED_STATES.has(head.state ?? 'running')) await deps.log.setState(runId, 'cancelled', 'cancelled through the gateway');
    sendJson(res, 200, { runId, removed: outcome.removed.length, workersNotified: outcome.workersNotified });
  } catch (err) {
    if (/no run/.test((err as Error).message)) return sendError(res, 404, 'NoSuchRun', (err as Error).message);
    throw err;
  }
}

/**
 * `GET /runs/ID/results?after=N` → 200 NDJSON: every listed Result from index N on (0-based; the
 * client has the first N, which acknowledges them), waiting for new ones, then one trailer line
 * `{ "end": true, "state", "error", "count" }` once the run has ended. Without `after` it starts
 * at the last acknowledged cursor; header `x-rollout-queue-cursor` says where it started.
 * 400 for an `after` that is not a whole number from 0 to the Results listed, 404 for an unknown run,
 * 409 `RunNotDelivered` for a running run that no pump (here or in another gateway) delivers; a
 * stream whose deliverer goes away ends without the trailer, as when this gateway stops.
 */
export async function streamResults(req: IncomingMessage, res: ServerResponse, runId: string, afterText: string | null, deps: RunsDeps): Promise<void> {
  const { log } = deps;
  const head = await log.head(runId);
  if (!head) return sendError(res, 404, 'NoSuchRun', `no run "${runId}" in the runs API; POST /runs first`);
  // A cursor past the Results listed would acknowledge Results the client never had (and,
  // for an ended run, end its stream at once): refused, as POST /runs/ID/ack refuses it.
  let cursor = afterText === null ? Math.min(head.ackedThrough, head.count) : /^\d+$/.test(afterText) ? Number(afterText) : Number.NaN;
  if (!Number.isSafeInteger(cursor) || cursor > head.count) {
    return sendError(res, 400, 'InvalidCursor', `query after=${JSON.stringify(afterText)}: must be a whole number from 0 to ${head.count} (the Results listed so far): the count of Results the client already has`);
  }
  if (!(await delivered(runId, deps))) return sendError(res, 409, 'RunNotDelivered', notDeliveredText(runId));
  await log.acknowledge(runId, cursor);
  // The cursor the stream starts at, so a client that omitted `after` can reconnect at the right place.
  res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store', 'x-rollout-queue-cursor': String(cursor) });
  let gone = false;
  let wake: (() => void) | undefined;
  const onChange = (): void => wake?.();
  res.once('close', () => {
    gone = true;
    wake?.();
  });
  log.changed.on(runId, onChange);
  try {
    while (!gone && !deps.closing()) {
      const [lines, now] = await Promise.all([log.lines(runId, cursor), log.head(runId)]);
      for (const line of lines) res.write(`${line}\n`);
      cursor += lines.length;
      if (now && now.state !== null && ENDED_STATES.has(now.state) && cursor >= now.count) {
        res.write(`${JSON.stringify({ end: true, state: now.state, error: now.error, count: cursor })}\n`);
        break;
      }
      // A run whose deliverer went away meanwhile (another gateway stopped): the stream ends
      // without its trailer, as when this gateway stops, and a reconnect is told what to do.
      if (!(await delivered(runId, deps))) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, STREAM_POLL_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  } finally {
    log.changed.off(runId, onChange);
    res.end();
  }
}
