import type { Containment } from '../sandbox/index.js';
import type { CostReceipt, ErrorInfo, ResultKind, RolloutSpec } from '../spec/index.js';

/**
 * Messages between the worker's main process and a rollout child over Node's IPC channel
 * (JSON serialization). The main process never runs rollout code; the child never talks
 * to Redis. A child runs many rollouts at once, each numbered by `seq` (1, 2, … in the order the
 * worker sent them). Besides the channel, the child writes its stage board (stage-board.ts),
 * which the worker reads only when a deadline fires, its watchdog looks, or the child died.
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
  /** The child's heap limit, MiB (`sandbox.memoryMb` of the rollouts it hosts): bounds its definition cache. */
  readonly memoryMb: number;
}

/** Fields of a spec that differ from rollout to rollout of a run; the rest is its {@link RolloutDefinition}. */
export const PER_ROLLOUT_FIELDS = ['leaseId', 'runId', 'runAttemptId', 'task', 'traceparent'] as const;

/**
 * What a run's rollouts share: the spec without its {@link PER_ROLLOUT_FIELDS} and `meta` (the rendered
 * artifact, the run and reward Refs, sandbox, timeouts, placement, rewardRange…), plus the values
 * of `sandbox.env` read from the worker's environment. Sent to a child once per content key
 * (see rollout-definition.ts); a spec field added later travels here without a protocol change.
 */
export type RolloutDefinition = Omit<RolloutSpec, (typeof PER_ROLLOUT_FIELDS)[number] | 'meta'> & {
  /** Values of `sandbox.env`, read from the worker's environment (never part of the key). */
  readonly secrets: Readonly<Record<string, string>>;
};

/** Gives the child a definition under its content key; it keeps the last ones (definition-lru.ts). */
export interface DefineMessage {
  readonly type: 'define';
  readonly key: string;
  /** Size charged to the child's definition cache, bytes (the worker computes it; both sides evict alike). */
  readonly bytes: number;
  readonly definition: RolloutDefinition;
}

/** Starts one rollout of a definition the child holds. */
export interface RunMessage {
  readonly type: 'run';
  /** This rollout's number in the child. */
  readonly seq: number;
  /** Its slot on the stage board (the lowest free one of the child). */
  readonly slot: number;
  /** The {@link DefineMessage} key of its definition. */
  readonly key: string;
  readonly leaseId: string;
  readonly runId: string;
  readonly runAttemptId: string;
  readonly task: RolloutSpec['task'];
  readonly traceparent?: string;
  readonly taskId: string;
  readonly attempt: number;
}

/** Asks the child to abort rollout `seq` through its `ctx.signal` (cooperative; the stage awaiting it is rejected at once). */
export interface CancelMessage {
  readonly type: 'cancel';
  readonly seq: number;
  readonly reason: string;
}

/** The receipt of the {@link CostMessage} with this `seq` is stored in Redis (durable). */
export interface CostStoredMessage {
  readonly type: 'cost-stored';
  readonly seq: number;
}

export type ParentMessage = InitMessage | DefineMessage | RunMessage | CancelMessage | CostStoredMessage;

/**
 * Messages posted in one turn of the sender's event loop, sent as one (in order): one write and
 * one wake-up of the other process for all of them (a burst of rollouts starting or ending together).
 */
export interface Batch<M> {
  readonly type: 'batch';
  readonly messages: readonly M[];
}

/** The child is up and has read its init message. */
export interface ReadyMessage {
  readonly type: 'ready';
}

/** A cost receipt, sent as soon as rollout code records it so it survives a later crash. */
export interface CostMessage {
  readonly type: 'cost';
  /** The rollout that recorded it. */
  readonly rollout: number;
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

/** Rollout `seq`'s outcome as classified inside the child. */
export interface DoneMessage {
  readonly type: 'done';
  readonly seq: number;
  readonly kind: ResultKind;
  readonly output: unknown;
  readonly reward: number | null;
  /** What the reward kept with its score (it returned `{ reward, details }`), on `ok` only; checked JSON data. */
  readonly rewardDetails?: unknown;
  readonly error: ErrorInfo | null;
  /**
   * The rollout ended while its code may still be running (timed out, cancelled, aborted): it
   * may keep using the child's CPU or memory. A child of its own is retired; a shared one after
   * a few (rollout-child.ts).
   */
  readonly abandoned: boolean;
  /**
   * The child must take no more rollouts: its stage board is gone, rollout code threw where nothing
   * caught it, or its heap in use is past three quarters of its limit (child-rss.ts).
   */
  readonly recycle: boolean;
  /**
   * Set when rollout code threw (or rejected) where nothing caught it, after the rollout's own
   * stage had begun: the stack, handled by the worker as a crash caused by this rollout alone
   * (the child itself stays up for its other rollouts, then is retired).
   */
  readonly crash?: string;
  /** Resident set size after the rollout, bytes. */
  readonly rssBytes: number;
}

/** A write to the stage board failed (rollout code closed its fd): its heartbeat and marks are stale from now on. */
export interface BoardLostMessage {
  readonly type: 'board-lost';
}

export type ChildMessage = ReadyMessage | CostMessage | LogMessage | DoneMessage | BoardLostMessage;
