import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * The stage board: a tiny unlinked file shared by a rollout child (its fd {@link STAGE_BOARD_FD})
 * and the worker's main process, where the child records, with synchronous positional writes
 * (visible before its next instruction runs), what the worker must be able to read while the
 * child's event loop is blocked or after the child died:
 * - the heartbeat: the child's monotonic clock, rewritten every {@link HEARTBEAT_MS} by a timer
 *   of its event loop, so an old one means the loop is blocked (the worker's watchdog);
 * - the sync entry: the rollout whose code the child is calling synchronously right now (run or
 *   reward), so a loop blocked there is blamed on that rollout alone;
 * - the culprit: the rollout that ended the process itself (`process.exit`, `process.abort`),
 *   so its neighbours' leases are not charged for the crash;
 * - per slot, when the reward of the rollout in that slot started (the worker reads it only when
 *   one of its outside deadlines fires, see StageDeadline): an IPC message per rollout would wake
 *   the worker's main process for nothing almost every time.
 *
 * Each record is three float64 `[a, b, a + b]`; the sum tells a torn or foreign record from a
 * real one. `seq` numbers a child's rollouts from 1 in the order the worker sent them (IPC keeps
 * the order), so a record left by an earlier rollout is never read as the current one's; 0 is
 * no rollout's. Slots are chosen by the worker (the lowest free one of the child), so the file
 * holds one record per rollout running at once.
 */

/** The child's fd of the board (stdio index 4 of the fork; Node marks it close-on-exec, so rollout code's processes do not get it). */
export const STAGE_BOARD_FD = 4;

/** How often a child rewrites its heartbeat, ms (monotonic). */
export const HEARTBEAT_MS = 250;

const RECORD_BYTES = 24;
const HEARTBEAT_AT = 0;
const SYNC_AT = RECORD_BYTES;
const CULPRIT_AT = 2 * RECORD_BYTES;
const SLOTS_AT = 3 * RECORD_BYTES;

/**
 * Milliseconds of CLOCK_MONOTONIC, the same clock in every process of the machine (libuv's
 * hrtime): a wall-clock step (NTP) cannot make a heartbeat look old or new.
 */
export function monotonicMs(): number {
  const [seconds, nanos] = process.hrtime();
  return seconds * 1000 + nanos / 1e6;
}

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

/** The record a write uses, reused: each is written synchronously. */
const written = new Float64Array(3);
const writtenBytes = new Uint8Array(written.buffer);

function writeRecord(fd: number, at: number, a: number, b: number): void {
  written[0] = a;
  written[1] = b;
  written[2] = a + b;
  writeSync(fd, writtenBytes, 0, RECORD_BYTES, at);
}

/** `[a, b]` of the record at `at`, or undefined when it is missing, torn or unreadable. Never throws. */
function readRecord(fd: number, at: number): [number, number] | undefined {
  const record = new Float64Array(3);
  try {
    if (readSync(fd, new Uint8Array(record.buffer), 0, RECORD_BYTES, at) !== RECORD_BYTES) return undefined;
  } catch {
    return undefined;
  }
  const [a, b, sum] = record as unknown as [number, number, number];
  return sum === a + b && Number.isFinite(a) && Number.isFinite(b) ? [a, b] : undefined;
}

/**
 * The child's side: the reward of rollout `seq`, in `slot`, starts at `sinceMs` (ms since the epoch).
 * @throws the fs error when the board is not open at `fd` (the child was not started by RolloutChild).
 */
export function writeRewardStage(fd: number, slot: number, seq: number, sinceMs: number): void {
  writeRecord(fd, SLOTS_AT + slot * RECORD_BYTES, seq, sinceMs);
}

/**
 * The worker's side: when rollout `seq`'s reward started (ms since the epoch), or undefined while it
 * has not (an earlier rollout's record in the slot, none yet, or an unreadable one). Never throws.
 */
export function readRewardStage(fd: number, slot: number, seq: number): number | undefined {
  const record = readRecord(fd, SLOTS_AT + slot * RECORD_BYTES);
  return record && record[0] === seq ? record[1] : undefined;
}

/** The child's side: its event loop turned now (monotonic ms). @throws the fs error as {@link writeRewardStage}. */
export function writeHeartbeat(fd: number, atMs: number = monotonicMs()): void {
  writeRecord(fd, HEARTBEAT_AT, 1, atMs);
}

/** The worker's side: the child's last heartbeat (monotonic ms), undefined when none was written. Never throws. */
export function readHeartbeat(fd: number): number | undefined {
  return readRecord(fd, HEARTBEAT_AT)?.[1];
}

/**
 * The child's side: from now on it calls rollout `seq`'s code synchronously (0: it returned).
 * @throws the fs error as {@link writeRewardStage}.
 */
export function writeSyncEntry(fd: number, seq: number, atMs: number = monotonicMs()): void {
  writeRecord(fd, SYNC_AT, seq, atMs);
}

/** The worker's side: the rollout whose code the child is in synchronously, since when (monotonic ms). Never throws. */
export function readSyncEntry(fd: number): { readonly seq: number; readonly sinceMs: number } | undefined {
  const record = readRecord(fd, SYNC_AT);
  return record && record[0] > 0 ? { seq: record[0], sinceMs: record[1] } : undefined;
}

/** The child's side: rollout `seq` is ending this process (written first, so the worker can tell). Never throws: the process is ending anyway. */
export function writeCulprit(fd: number, seq: number): void {
  try {
    writeRecord(fd, CULPRIT_AT, seq, monotonicMs());
  } catch {
    // The board is gone (rollout code closed it): the crash is then blamed as an unexplained one.
  }
}

/** The worker's side: the rollout that ended the child itself, if one said so. Never throws. */
export function readCulprit(fd: number): number | undefined {
  const record = readRecord(fd, CULPRIT_AT);
  return record && record[0] > 0 ? record[0] : undefined;
}
