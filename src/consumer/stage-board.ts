import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * The stage board: a tiny unlinked file shared by a rollout child (its fd {@link STAGE_BOARD_FD})
 * and the worker's main process, where the child records that a rollout's reward starts, and
 * when, before calling it. The worker reads it only when one of its outside deadlines fires
 * (see StageDeadline): an IPC message per rollout would wake the worker's main process for
 * nothing almost every time, and a reward that blocks the child's event loop must be
 * classified and timed from outside anyway. The write is synchronous (a positional write to
 * the page cache), so it is visible before the reward's first instruction runs.
 *
 * Record: three float64 `[seq, sinceMs, seq + sinceMs]`; the sum tells a torn or foreign
 * record from a real one. `seq` numbers the child's rollouts from 1 in the order the worker
 * sent them (IPC keeps the order), so a record left by an earlier rollout is never read as
 * the current one's.
 */

/** The child's fd of the board (stdio index 4 of the fork; Node marks it close-on-exec, so rollout code's processes do not get it). */
export const STAGE_BOARD_FD = 4;

const RECORD_BYTES = 24;

/**
 * Creates an unlinked board file in the OS temp dir for one child; the caller passes the fd in
 * the child's stdio at {@link STAGE_BOARD_FD} and closes it once the child is gone. Nothing is
 * left on disk, whatever happens to either process.
 * @returns the worker's fd of it.
 * @throws the fs error when the temp dir is not writable.
 */
export function createStageBoard(): number {
  const path = join(tmpdir(), `rollout-queue-stage-${process.pid}-${randomBytes(6).toString('hex')}`);
  const fd = openSync(path, 'wx+', 0o600);
  try {
    unlinkSync(path);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

/** The record {@link writeRewardStage} writes, reused: it is written synchronously, once per rollout. */
const written = new Float64Array(3);
const writtenBytes = new Uint8Array(written.buffer);

/**
 * The child's side: rollout `seq`'s reward starts at `sinceMs` (ms since the epoch).
 * @throws the fs error when the board is not open at `fd` (the child was not started by RolloutChild).
 */
export function writeRewardStage(fd: number, seq: number, sinceMs: number): void {
  written[0] = seq;
  written[1] = sinceMs;
  written[2] = seq + sinceMs;
  writeSync(fd, writtenBytes, 0, RECORD_BYTES, 0);
}

/**
 * The worker's side: when rollout `seq`'s reward started (ms since the epoch), or undefined
 * while it has not (an earlier rollout's record, none yet, or an unreadable one). Never throws.
 */
export function readRewardStage(fd: number, seq: number): number | undefined {
  const record = new Float64Array(3);
  try {
    if (readSync(fd, new Uint8Array(record.buffer), 0, RECORD_BYTES, 0) !== RECORD_BYTES) return undefined;
  } catch {
    return undefined;
  }
  const [at, sinceMs, sum] = record as unknown as [number, number, number];
  return at === seq && sum === at + sinceMs && Number.isFinite(sinceMs) ? sinceMs : undefined;
}
