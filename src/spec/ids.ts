import { z } from 'zod';

/**
 * Characters allowed in run ids, task keys and lease ids. BullMQ job ids cannot contain `:`
 * (it separates Redis key parts, see BullMQ `src/classes/queue-keys.ts`) nor be integers
 * (BullMQ reserves those for its own auto ids), so `[A-Za-z0-9._-]` with a non-digit.
 */
export const SAFE_ID = /^[A-Za-z0-9._-]+$/;

/** Longest run id, task key or lease id accepted, in characters. */
export const MAX_ID_LENGTH = 200;

/** Characters of a run id: {@link SAFE_ID} without `.` (the `.` separates run id and task key in a lease id). */
const RUN_ID = /^[A-Za-z0-9_-]+$/;

/** A run id: safe characters, no `.` (the `.` separates run id and task key in a lease id). */
export const RunIdSchema = z
  .string()
  .min(1)
  .max(MAX_ID_LENGTH)
  .regex(RUN_ID, 'runId may hold only letters, digits, "_" and "-" (no "." or ":"), e.g. "eval-2026-11-29"')
  .describe('Names one run; part of every lease id.');

/** A lease id `<runId>.<taskKey>`: the BullMQ job id of the rollout. */
export const LeaseIdSchema = z
  .string()
  .min(3)
  .max(MAX_ID_LENGTH * 2 + 1)
  .regex(SAFE_ID, 'leaseId may hold only letters, digits, ".", "_" and "-"; build it with leaseIdFor(runId, taskKey)')
  .refine((value) => value.includes('.'), 'leaseId must be "<runId>.<taskKey>"; build it with leaseIdFor(runId, taskKey)')
  .describe('"<runId>.<taskKey>"; equal to the BullMQ job id, so re-submitting is a no-op.');

/**
 * True when `value` is what {@link LeaseIdSchema} accepts (same rules, without zod's cost: the
 * worker checks the lease id of every job it takes).
 */
export function isLeaseId(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 3 && value.length <= MAX_ID_LENGTH * 2 + 1 && SAFE_ID.test(value) && value.includes('.');
}

/** True when `value` is what {@link RunIdSchema} accepts (same rules, without zod's cost: checked on every spec parsed). */
export function isRunId(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= MAX_ID_LENGTH && RUN_ID.test(value);
}
