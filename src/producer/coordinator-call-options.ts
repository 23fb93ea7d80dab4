import { isRunId, MAX_ID_LENGTH, RunIdSchema } from '../spec/index.js';
import { checkRunWeight } from './fair-share.js';
import type { RunReuse } from './run-reuse.js';
import type { SessionPlan } from './run-session.js';

/** Options of `RolloutQueue.mapRollouts`. */
export interface MapRolloutsOptions {
  /** Names the run; part of every lease id. Letters, digits, `_`, `-`. Re-using it resumes the run. */
  readonly runId: string;
  /** Aborting cancels the run (waiting jobs removed, workers told) and the iterator throws `AbortError`. */
  readonly signal?: AbortSignal;
  /** Names this submission of the run. Default: a random UUID for a new run; a resumed run keeps its stored one. */
  readonly runAttemptId?: string;
  /** Number of drafts, when known and `drafts` is not an array (an array's length is used). Shown by `status`. */
  readonly specCount?: number;
  /**
   * An opaque fingerprint of what the drafts were made from (e.g. a hash of the tasks file and
   * the artifact), stored with a new run's record and shown by `status` (`run.sourceFingerprint`)
   * so a caller can refuse to resume a run id with other inputs (the CLI's `run` does). An
   * existing run keeps its own. At most 200 characters.
   */
  readonly sourceFingerprint?: string;
  /** See {@link CoordinatorOptions.coordinatorNote}. */
  readonly coordinatorNote?: string;
  /** See {@link CoordinatorOptions.checkPreviousNote}. */
  readonly checkPreviousNote?: (previous: string | null) => void | Promise<void>;
  /**
   * Called once, after every draft was read, when some drafts name leases this run id delivered
   * before this call (a run id used again): those drafts are neither run nor yielded again, even
   * if changed; `reuse.nothingNew` says the call yields no Result at all. A warning says the same
   * either way. Throwing from it ends the iteration with that error (new leases of the call may
   * be enqueued already: the run stays resumable). See {@link RunReuse} for the ways out.
   */
  readonly onDeliveredBefore?: (reuse: RunReuse) => void;
  /**
   * This call re-attaches to its own run: the same drafts under the same run id after its
   * coordinator stopped (the CLI's `run --run-id`, which refuses other inputs). Drafts delivered
   * before are then the expected path, logged at info as progress (`runReattachText`) instead of
   * the warning pointing at a new run id; `onDeliveredBefore` is called all the same. Default
   * false: a library caller reusing a run id by mistake is warned.
   */
  readonly reattach?: boolean;
  /**
   * The run's share of the queue's workers, relative to the other runs with jobs waiting on the
   * same queue: a run of weight 2 gets two slots for each one of a weight-1 run; alone, a run
   * gets every slot. Each job's BullMQ priority comes from a per-queue virtual clock, so a run
   * started after a large one begins within a few Results of it, not after its whole
   * `maxInFlight` window (docs/fair-share.md). 0.01–100, default 1 (equal shares). Jobs that
   * other clients add without a priority are served before every run's.
   */
  readonly weight?: number;
}

/** The names of {@link MapRolloutsOptions}, {@link CoordinatorOptions} and `rollout`'s options, checked at run time. */
export const MAP_ROLLOUTS_OPTIONS = ['runId', 'signal', 'runAttemptId', 'specCount', 'sourceFingerprint', 'coordinatorNote', 'checkPreviousNote', 'onDeliveredBefore', 'reattach', 'weight'] as const satisfies readonly (keyof MapRolloutsOptions)[];
export const COORDINATOR_OPTIONS = ['signal', 'coordinatorNote', 'checkPreviousNote'] as const satisfies readonly (keyof CoordinatorOptions)[];
export const ROLLOUT_OPTIONS = ['runId', 'signal'] as const;

/** Options of `RolloutQueue.attach`. */
export interface CoordinatorOptions {
  /** Aborting cancels the run (waiting jobs removed, workers told) and the iterator throws `AbortError`. */
  readonly signal?: AbortSignal;
  /**
   * What this coordinator says of itself (the CLI: the absolute results file it writes),
   * written to the run's record once the session holds the run's coordinator lease, so a
   * coordinator refused as busy never overwrites the note of the one that delivers; read back as
   * `status(runId).run.coordinatorNote`. At most 4096 characters.
   */
  readonly coordinatorNote?: string;
  /**
   * Called once the session holds the coordinator lease of a run that is not completed, before
   * it stores `coordinatorNote` or delivers anything, with the note the run's previous
   * coordinator stored (null: none). Throwing gives the run up untouched: the lease is released
   * and the iterator throws that error. The CLI refuses a results file other than the one a
   * previous coordinator filled with the run's Results (one run's Results, one file).
   */
  readonly checkPreviousNote?: (previous: string | null) => void | Promise<void>;
}

/** Longest `coordinatorNote`, characters. */
const MAX_NOTE_LENGTH = 4096;

/**
 * The session plan's part for `options.coordinatorNote`.
 * @throws TypeError when it is not a string of 1 to {@link MAX_NOTE_LENGTH} characters.
 */
export function noteOf(options: CoordinatorOptions): Pick<SessionPlan, 'coordinatorNote' | 'checkPreviousNote'> {
  const { coordinatorNote: note, checkPreviousNote: check } = options as { coordinatorNote?: unknown; checkPreviousNote?: unknown };
  if (check !== undefined && typeof check !== 'function') throw new TypeError('option checkPreviousNote must be a function; omit it to check nothing');
  const checked = check !== undefined ? { checkPreviousNote: options.checkPreviousNote } : {};
  if (note === undefined) return checked;
  if (typeof note !== 'string' || note.length === 0 || note.length > MAX_NOTE_LENGTH) {
    throw new TypeError(`option coordinatorNote must be a string of 1 to ${MAX_NOTE_LENGTH} characters; omit it to store none`);
  }
  return { coordinatorNote: note, ...checked };
}

/**
 * The session plan's part for the options only `mapRollouts` takes beyond `runId`, `signal`,
 * `runAttemptId` and `specCount`: `sourceFingerprint`, `onDeliveredBefore`, `reattach`, `weight`, and the
 * coordinator note ({@link noteOf}), checked in that order.
 * @throws TypeError naming the first option of a wrong type or size, and how to omit it.
 */
export function mapRolloutsPlanPart(options: MapRolloutsOptions): Pick<SessionPlan, 'sourceFingerprint' | 'onDeliveredBefore' | 'reattach' | 'weight' | 'coordinatorNote' | 'checkPreviousNote'> {
  const fingerprint = options.sourceFingerprint;
  if (fingerprint !== undefined && (typeof fingerprint !== 'string' || fingerprint.length === 0 || fingerprint.length > MAX_ID_LENGTH)) {
    throw new TypeError(`mapRollouts option sourceFingerprint must be a string of 1 to ${MAX_ID_LENGTH} characters (a hash of the inputs); omit it to store none`);
  }
  const onDeliveredBefore = options.onDeliveredBefore as unknown;
  if (onDeliveredBefore !== undefined && typeof onDeliveredBefore !== 'function') throw new TypeError('mapRollouts option onDeliveredBefore must be a function (reuse) => void; omit it to be told by the warning only');
  const reattach = options.reattach as unknown;
  if (reattach !== undefined && typeof reattach !== 'boolean') throw new TypeError('mapRollouts option reattach must be true or false; omit it for false (a run id used again is warned about)');
  const weight = checkRunWeight(options.weight, 'mapRollouts option weight');
  return { reattach: reattach === true, ...(fingerprint !== undefined ? { sourceFingerprint: fingerprint } : {}), ...noteOf(options), onDeliveredBefore: options.onDeliveredBefore, weight };
}

/**
 * `runId` when it is a valid run id (letters, digits, `_`, `-`; see `RunIdSchema`).
 * @throws Error quoting the run id and saying what is wrong with it.
 */
export function checkRunId(runId: string): string {
  if (isRunId(runId)) return runId;
  const parsed = RunIdSchema.safeParse(runId);
  if (!parsed.success) throw new Error(`runId ${JSON.stringify(runId)}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}
