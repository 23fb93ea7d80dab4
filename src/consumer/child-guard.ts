import { AsyncLocalStorage } from 'node:async_hooks';
import { HEARTBEAT_MS, STAGE_BOARD_FD, writeCulprit, writeHeartbeat, writeSyncEntry } from './stage-board.js';

/**
 * How a rollout child that hosts many rollouts at once tells the worker whose fault a crash or a
 * blocked event loop is, so that one rollout's crash does not spend its neighbours' re-dispatch
 * budgets (DESIGN.md "Slots and children"):
 * - every rollout runs in an AsyncLocalStorage scope, which follows its code through awaits,
 *   timers and callbacks: `process.exit` / `process.abort` called there first write the
 *   rollout as the culprit on the stage board, and an exception or rejection nothing caught
 *   there ends that rollout alone as a crash (the child stays up for the others, then is retired);
 * - a call into a rollout's code (run, reward) is marked on the board while it runs
 *   synchronously, so a loop blocked inside it names it;
 * - a heartbeat on the board shows the worker the loop is turning.
 * What cannot be told this way (a signal such as SIGSEGV from native code, a heap out of memory,
 * a loop blocked after an await) is blamed on no one: the worker retries every rollout the child
 * held in a child of its own (rollout-processor.ts).
 */

/** One rollout's scope in the child. */
export interface RolloutScope {
  readonly seq: number;
  /** The rollout's Result was sent: what its code does now is a stray. */
  finished: boolean;
  /** Ends the rollout as a crash caused by its own code (an uncaught exception or rejection). */
  crash(error: unknown): void;
}

export const rolloutScope = new AsyncLocalStorage<RolloutScope>();

/** Rollout code threw where nothing caught it after its rollout ended: the child takes no more rollouts. */
let tainted = false;
/** The seq of the rollout whose code is being called synchronously now (0: none). */
let syncSeq = 0;
/** A board write failed (rollout code closed fd 4): the worker can no longer watch this child. */
let boardLost = false;

/** True once the child should be retired after its rollouts: its board is gone, or stray rollout code threw. */
export function mustRecycle(): boolean {
  return tainted || boardLost;
}

/** Sends what the child holds back for the worker (child-main's batched messages): run before the process ends itself. */
let flushOutbox: () => void = () => undefined;

/** Sets what writes the child's pending messages out, called before `process.exit`/`abort` end it. */
export function beforeExit(flush: () => void): void {
  flushOutbox = flush;
}

/** Told once when a board write fails (child-main tells the worker, which then stops reading the board). */
let onBoardLost: () => void = () => undefined;

/** Sets what is called the first time a board write fails. */
export function whenBoardLost(handler: () => void): void {
  onBoardLost = handler;
}

function board(write: () => void): void {
  try {
    write();
  } catch {
    if (!boardLost) onBoardLost();
    boardLost = true;
  }
}

/**
 * Calls `fn` (rollout `seq`'s code) with the call marked on the board while it runs synchronously;
 * the mark of an enclosing call, if any, is put back after it.
 */
export function callMarked<T>(seq: number, fn: () => T): T {
  const outer = syncSeq;
  syncSeq = seq;
  board(() => writeSyncEntry(STAGE_BOARD_FD, seq));
  try {
    return fn();
  } finally {
    syncSeq = outer;
    board(() => writeSyncEntry(STAGE_BOARD_FD, outer));
  }
}

/** The stack or text of an error, for a crash report. */
export function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : `thrown value: ${String(error)}`;
}

/**
 * Installs the guards (once, before any rollout code loads): the exit and abort wrappers and the
 * handlers of uncaught exceptions and unhandled rejections.
 * An error outside every rollout's scope is the child's own: written to stderr, and the child
 * exits 1 as Node would (the worker then blames no rollout).
 */
export function installGuards(): void {
  const exit = process.exit.bind(process);
  const abort = process.abort.bind(process);
  const blame = (): void => {
    const seq = rolloutScope.getStore()?.seq ?? syncSeq;
    if (seq > 0) writeCulprit(STAGE_BOARD_FD, seq);
    // Answers and receipts of this turn still reach the worker (as they did before messages were batched).
    try {
      flushOutbox();
    } catch {
      // The channel is gone: nothing to tell.
    }
  };
  process.exit = ((code?: number | string | null) => {
    blame();
    return exit(code);
  }) as typeof process.exit;
  process.abort = (() => {
    blame();
    return abort();
  }) as typeof process.abort;
  const onUncaught = (error: unknown, what: string): void => {
    const scope = rolloutScope.getStore();
    if (scope && !scope.finished) return scope.crash(error);
    if (scope) {
      // Code of a rollout already answered: nothing to blame it on now; no rollout starts here any more.
      tainted = true;
      process.stderr.write(`rollout child: ${what} from code of a finished rollout (seq ${scope.seq}); this child takes no more rollouts\n${describeError(error)}\n`);
      return;
    }
    process.stderr.write(`rollout child: ${what} outside any rollout\n${describeError(error)}\n`);
    exit(1);
  };
  process.on('uncaughtException', (error) => onUncaught(error, 'uncaught exception'));
  process.on('unhandledRejection', (reason) => onUncaught(reason, 'unhandled rejection'));
}

/** Writes the heartbeat now and every {@link HEARTBEAT_MS} (a timer outside every rollout's scope). */
export function startHeartbeat(): void {
  board(() => writeHeartbeat(STAGE_BOARD_FD));
  setInterval(() => board(() => writeHeartbeat(STAGE_BOARD_FD)), HEARTBEAT_MS).unref();
}
