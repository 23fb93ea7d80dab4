import { leaseIdFor } from '../lease/index.js';
import type { PreparedDraft } from './rollout-draft.js';
import type { BatchCheck } from './run-store.js';

// The batch shapes of DraftEnqueuer (draft-enqueuer.ts) and the pure steps it takes per batch:
// its size, a repeated lease's refusal, the check sent to Redis.

/** A draft that passed `prepareDraft`: it has a spec to enqueue. */
export type ValidDraft = Extract<PreparedDraft, { ok: true }>;

/** A prepared draft and its 0-based position in the caller's list (the lease's score in `runLeases`). */
export interface Positioned<D extends PreparedDraft = PreparedDraft> {
  readonly draft: D;
  readonly index: number;
}

/** A first batch taken before the run's session opened (see `DraftEnqueuer.takeOpening`). */
export interface OpeningBatch {
  readonly values: readonly unknown[];
  readonly batch: readonly Positioned[];
  readonly runAttemptId: string;
  readonly check: BatchCheck;
}

/** A lease's id and coordinator-side deadlines, as its enqueue clock records them. */
export const leaseClock = (draft: ValidDraft): { leaseId: string; scheduleToStartMs: number | undefined; scheduleToCloseMs: number | undefined } => ({
  leaseId: draft.leaseId, scheduleToStartMs: draft.spec.timeouts.scheduleToStartMs, scheduleToCloseMs: draft.spec.timeouts.scheduleToCloseMs,
});

/**
 * The refusal of a draft whose lease id an earlier draft of the same call named (same taskKey,
 * or same task.id): a lease has one job and one Result, so the repeat cannot share it, yet every
 * draft gets its own Result. Its lease id is the repeated key plus `#<position>`, sanitized
 * (`safeTaskKey`), so it is stable across a resume (answered once) and names no real lease.
 */
export function repeatRefusal(runId: string, repeat: PreparedDraft, index: number): PreparedDraft {
  const key = repeat.leaseId.slice(runId.length + 1);
  const meta = repeat.ok ? repeat.spec.meta : repeat.meta;
  return {
    ...(meta !== undefined ? { meta } : {}),
    ok: false,
    kind: 'caller',
    leaseId: leaseIdFor(runId, `${key}#${index}`),
    taskId: repeat.taskId,
    error: {
      type: 'DuplicateLease',
      message: `draft #${index} repeats lease ${repeat.leaseId} of an earlier draft of this call (same taskKey or task.id); a lease has one Result, so this draft was not enqueued; give each draft a distinct taskKey or task.id`,
    },
  };
}

/**
 * Most drafts checked and added per round trip. Bounds the Lua scripts' argument lists and the
 * time Redis spends in one script, while cutting round trips per draft by ~100×.
 */
export const MAX_BATCH = 100;

/** Free slots a refill waits for: a tenth of `maxInFlight`, 1 to MAX_BATCH. */
export const refillBatch = (maxInFlight: number): number => Math.max(1, Math.min(MAX_BATCH, Math.floor(maxInFlight / 10)));

/**
 * The check of a batch: every lease of it (each names its own: `DraftEnqueuer.prepare` turns a
 * repeat into a refusal with a lease id of its own), and the enqueue clock rides along for each
 * valid one the evaluation cache cannot answer (`cached`: the enqueuer has a cache and a taker
 * of its answers; those are stamped once known fresh). One this batch then does not add (a stop
 * halted it) keeps a stamp, as after a crash before the add.
 */
export function batchCheckOf(batch: readonly Positioned[], cached: boolean): BatchCheck {
  const drafts = batch.map(({ draft }) => draft);
  const stamp = drafts.filter((draft): draft is ValidDraft => draft.ok && !(cached && draft.spec.class === 'evaluation')).map(leaseClock);
  return { leaseIds: drafts.map(({ leaseId }) => leaseId), stamp };
}
