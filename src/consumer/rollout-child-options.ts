import type { Containment } from '../sandbox/index.js';
import type { LogMessage } from './child-protocol.js';

/** Bytes of a child's stderr kept for exit reports (the tail is what explains a crash). */
export const STDERR_TAIL_BYTES = 4096;

/**
 * Rollouts of a shared child that may end while their code may still run (timed out, cancelled,
 * hung) before the child is retired: their timers, sockets or loops may keep using its CPU and
 * memory. A child of its own is retired after the first, as a child always was.
 */
export const MAX_ABANDONED_SHARED = 8;

/** Options of {@link RolloutChild.start} (rollout-child.ts). */
export interface RolloutChildOptions {
  /** Heap limit of the child in MiB (`--max-old-space-size`): the `sandbox.memoryMb` of every rollout it hosts. */
  readonly memoryMb: number;
  /** `shared` hosts many rollouts at once; `solo` one at a time (`sandbox.isolation: "process"`, or a lease involved in a crash). */
  readonly kind: 'shared' | 'solo';
  /** Extra node flags for the child (tests use a bad one to show a start failure). */
  readonly execArgv: readonly string[];
  /** Allowlist sent to the child for Ref resolution. */
  readonly allow: readonly string[];
  /** Environment of the child: minimal by design (secrets travel in run definitions over IPC). */
  readonly env: NodeJS.ProcessEnv;
  /** Milliseconds to wait for the child's `ready`. */
  readonly startTimeoutMs: number;
  /** Where rollout log lines go. */
  readonly onLog: (message: LogMessage) => void;
  /** The worker's containment: sent to the child; with `setpriv` the child dies with the worker. */
  readonly containment: Containment;
  /** Largest output of a run, bytes of JSON: sent to the child. */
  readonly maxOutputBytes: number;
  /** Retire after this many rollouts (`Infinity`: never by count); the pool counts them as it places them. */
  readonly maxRolloutsPerChild: number;
  /** Retire once the RSS reported after a rollout exceeds this many MiB. */
  readonly maxChildRssMb: number;
}
