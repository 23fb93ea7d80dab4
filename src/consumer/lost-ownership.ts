import { ErrorCode } from 'bullmq';

/** BullMQ codes meaning "this attempt no longer owns the job" (BullMQ `src/enums/error-code.ts`). */
export const LOST_OWNERSHIP_CODES: ReadonlySet<number> = new Set([
  ErrorCode.JobNotExist,
  ErrorCode.JobLockNotExist,
  ErrorCode.JobNotInState,
  ErrorCode.JobLockMismatch,
]);

/** True when `err` is BullMQ refusing a finish because this attempt lost the job. */
export function isLostOwnership(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' && LOST_OWNERSHIP_CODES.has(code);
}

/**
 * What BullMQ's refusal of a finish says about the lease, by its code (BullMQ
 * `src/enums/error-code.ts`): only a lock held by another token means another attempt exists.
 */
export function lostOwnershipText(err: Error): string {
  switch ((err as { code?: unknown }).code) {
    case ErrorCode.JobLockMismatch:
      return 'the lease was re-dispatched and belongs to another attempt';
    case ErrorCode.JobNotExist:
      return "the lease's job is gone from Redis (its run was purged)";
    default:
      return 'its lock expired and the answer could not be kept (see "finished answer not kept"); the lease runs again';
  }
}
