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
