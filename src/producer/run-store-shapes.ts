import type { RunStatus } from '../lease/index.js';

// The shapes RunStore (run-store.ts) takes and returns, and its NO_RECORD reply; kept apart so
// the Lua scripts' reply decoders (run-store-scripts.ts) share them without importing the store.

/** What `RunStore.opener` found (and made) when it took the coordinator lease. */
export interface OpenedRun {
  /** The run record as it was before this call; undefined when no such run existed. */
  readonly head: RunHead | undefined;
  /** With `create` (and a run neither stopped nor cancelled): the record as it is now. */
  readonly created?: {
    /** The stored runAttemptId (an existing run keeps its own). */
    readonly runAttemptId: string;
    /** The stored specCount (an existing run keeps its own), null when unknown. */
    readonly specCount: number | null;
    /** The run was completed and is running again: undo its retention (`persistRun`). */
    readonly reopened: boolean;
    /** A new run (no record before) given an opening batch: that batch's check, as `RunStore.checkAndStamp` replies. */
    readonly checked?: CheckedBatch;
  };
}

/** The leases of one batch of drafts to check, and those of them to stamp (see `RunStore.checkAndStamp`). */
export interface BatchCheck {
  readonly leaseIds: readonly string[];
  readonly stamp: readonly Omit<LeaseToRecord, 'index'>[];
}

/** What `RunStore.checkAndStamp` found: each lease's flags, and the time stamped (ms since the epoch, Redis clock). */
export interface CheckedBatch {
  readonly flags: ReadonlyMap<string, LeaseFlags>;
  readonly stampedAt: number;
}

/** The parts of a run record the producer steers by. */
export interface RunHead {
  readonly status: RunStatus;
  readonly stopReason: string | null;
  readonly runAttemptId: string | null;
  readonly specCount: number | null;
  readonly enqueued: number;
  /**
   * Size of the run's delivered set, where the read included it (`RunStore.readHead`): it
   * only grows while the run lives, so a smaller one than seen before means Redis went back to
   * an older state (`RollbackWatch`).
   */
  readonly delivered?: number;
}

/** Quarantine record of a lease ended by the stall limit (same shape the worker writes). */
export interface QuarantineRecord {
  readonly reason: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderrTail: string;
}

/** A lease `RunStore.recordLeases` records: its submission index and its coordinator-side deadlines. */
export interface LeaseToRecord {
  readonly leaseId: string;
  readonly index: number;
  readonly scheduleToStartMs?: number | undefined;
  readonly scheduleToCloseMs?: number | undefined;
}

/** What `RunStore.leaseFlags` knows of a lease. */
export interface LeaseFlags {
  /** In the run's enqueued set: a re-submission must not add it again. */
  readonly enqueued: boolean;
  /** Its Result was acknowledged before. */
  readonly delivered: boolean;
}

/** What a new run's record is made with (an existing run keeps its own fields). */
export interface RunCreation {
  readonly runAttemptId: string;
  /** Number of drafts, undefined while unknown (a stream). */
  readonly specCount: number | undefined;
  /** `MapRolloutsOptions.sourceFingerprint`, stored once. */
  readonly sourceFingerprint?: string;
}

/**
 * What a write of a run's bookkeeping returns, having written nothing, when the run has no record
 * (`runHasRecordLua`): Redis lost it mid-run (restarted without persistence, or flushed). Its
 * coordinator makes the record again (`RunStore.restoreRun`) and writes again: keys made
 * for a run without a record were never expired by any retention.
 */
export const NO_RECORD = 'no-record';
