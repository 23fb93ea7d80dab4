/**
 * Whose fault the end of a rollout child is, for each rollout it held (DESIGN.md "Slots and
 * children": a child crash re-dispatches its co-resident leases without spending their budget; a
 * lease involved in a crash retries in a child of its own, so only the crashes it causes count).
 */

/** Why the worker killed a child, when it did. */
export type KillCause =
  /** Rollout `seq` passed one of its limits while it was alone in the child, or while the child was blocked in its code. */
  | { readonly kind: 'limit'; readonly seq: number; readonly limit: 'hang' | 'overran' | 'abort' }
  /** The child's event loop stopped turning with several rollouts in it (the watchdog); `syncSeq` names the rollout whose code it was in, when known. */
  | { readonly kind: 'blocked'; readonly syncSeq: number | undefined }
  /** Retired or closed by the pool (a rollout still in it is no fault of its own). */
  | { readonly kind: 'retired' };

/**
 * How a crash counts for one lease:
 * - `self`: this rollout caused it (it said so, it was alone, or its code threw uncaught): a
 *   re-dispatch counted against its budget, as a crash always was;
 * - `neighbour`: another rollout of the child caused it: re-dispatched, not counted;
 * - `shared`: nobody can tell which rollout caused it (a signal, an out-of-memory, a loop blocked
 *   after an await), or this one blocked the loop before its own limit: re-dispatched, not
 *   counted, and its next attempts run in a child of their own, where only it can be the cause.
 */
export type CrashBlame = 'self' | 'neighbour' | 'shared';

/** What ended one rollout of a child that exited. */
export type ExitVerdict =
  | { readonly kind: 'limit'; readonly limit: 'hang' | 'overran' | 'abort' }
  | { readonly kind: 'aborted' }
  | { readonly kind: 'crashed'; readonly blame: CrashBlame };

/** What is known about a child's exit. */
export interface ExitFacts {
  /** Why the worker killed it; undefined when it died on its own. */
  readonly cause: KillCause | undefined;
  /** The rollout that ended the process itself (`process.exit`/`abort` in its code, on the stage board). */
  readonly culprit: number | undefined;
  /** Rollouts in the child when it died (sent and not answered). */
  readonly inFlight: number;
}

/**
 * The verdict for rollout `seq` of a child that exited.
 * @param aborted the worker had aborted this rollout (cancel, shutdown, lost lock): the attempt ends as aborted whatever else happened.
 */
export function blameExit(seq: number, aborted: boolean, facts: ExitFacts): ExitVerdict {
  const { cause, culprit, inFlight } = facts;
  if (cause?.kind === 'limit' && cause.seq === seq) return { kind: 'limit', limit: cause.limit };
  if (aborted) return { kind: 'aborted' };
  if (cause?.kind === 'limit' || cause?.kind === 'retired') return { kind: 'crashed', blame: 'neighbour' };
  if (cause?.kind === 'blocked') {
    if (cause.syncSeq === undefined || cause.syncSeq === seq) return { kind: 'crashed', blame: 'shared' };
    return { kind: 'crashed', blame: 'neighbour' };
  }
  if (culprit !== undefined) return { kind: 'crashed', blame: culprit === seq ? 'self' : 'neighbour' };
  return { kind: 'crashed', blame: inFlight === 1 ? 'self' : 'shared' };
}
