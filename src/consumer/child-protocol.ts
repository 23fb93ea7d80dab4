import type { Containment } from '../sandbox/index.js';
import type { CostReceipt, ErrorInfo, ResultKind, RolloutSpec } from '../spec/index.js';

/**
 * Messages between the worker's main process and a rollout child over Node's IPC channel
 * (JSON serialization). The main process never runs rollout code; the child never talks
 * to Redis. Besides the channel, the child records when each rollout's reward starts on its
 * stage board (stage-board.ts), which the worker reads only when a deadline fires.
 */

/** Sent once after fork: what the child needs for every rollout. */
export interface InitMessage {
  readonly type: 'init';
  /** Allowlist patterns for Ref resolution (see src/ref). */
  readonly allow: readonly string[];
  /** The worker's containment, used by every sandbox the child makes (it does not probe again). */
  readonly containment: Containment;
  /** Largest output of a run, bytes of JSON (the worker's `maxOutputBytes`). */
  readonly maxOutputBytes: number;
}

/** Starts one rollout in the child. */
export interface RunMessage {
  readonly type: 'run';
  readonly spec: RolloutSpec;
  readonly taskId: string;
  readonly attempt: number;
  /** Values of `spec.sandbox.env`, read from the worker's environment. */
  readonly secrets: Readonly<Record<string, string>>;
}

/** Asks the child to abort the current rollout through `ctx.signal` (cooperative). */
export interface CancelMessage {
  readonly type: 'cancel';
  readonly reason: string;
}

/** The receipt of the {@link CostMessage} with this `seq` is stored in Redis (durable). */
export interface CostStoredMessage {
  readonly type: 'cost-stored';
  readonly seq: number;
}

export type ParentMessage = InitMessage | RunMessage | CancelMessage | CostStoredMessage;

/** The child is up and has read its init message. */
export interface ReadyMessage {
  readonly type: 'ready';
}

/** A cost receipt, sent as soon as rollout code records it so it survives a later crash. */
export interface CostMessage {
  readonly type: 'cost';
  readonly receipt: CostReceipt;
  /** Numbers the receipt within this child, so the worker's {@link CostStoredMessage} can answer it. */
  readonly seq: number;
}

/** A log line from rollout code (`ctx.log`), re-emitted by the worker's logger. */
export interface LogMessage {
  readonly type: 'log';
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly obj: Record<string, unknown>;
  readonly msg?: string;
}

/** The rollout's outcome as classified inside the child. */
export interface DoneMessage {
  readonly type: 'done';
  readonly kind: ResultKind;
  readonly output: unknown;
  readonly reward: number | null;
  readonly error: ErrorInfo | null;
  /** The child may still be busy with abandoned work (timed-out run): do not reuse it. */
  readonly recycle: boolean;
  /** Resident set size after the rollout, bytes. */
  readonly rssBytes: number;
}

export type ChildMessage = ReadyMessage | CostMessage | LogMessage | DoneMessage;
