import type { CostReceipt } from '../spec/index.js';
import type { AttemptAbort } from './attempt-abort.js';
import type { DoneMessage, RolloutDefinition } from './child-protocol.js';
import type { CrashBlame } from './crash-blame.js';
import type { Overrun, StageLimits } from './stage-deadline.js';

/** How a rollout attempt in a child ended, seen from the worker's main process. */
export type AttemptOutcome =
  | { readonly type: 'done'; readonly done: DoneMessage; readonly costs: readonly CostReceipt[] }
  | { readonly type: 'crashed'; readonly blame: CrashBlame; readonly exitCode: number | null; readonly signal: string | null; readonly stderrTail: string; readonly costs: readonly CostReceipt[] }
  | { readonly type: 'hung'; readonly hangMs: number; readonly stderrTail: string; readonly costs: readonly CostReceipt[] }
  | { readonly type: 'overran'; readonly overrun: Overrun; readonly stderrTail: string; readonly costs: readonly CostReceipt[] }
  | { readonly type: 'aborted'; readonly reason: string; readonly costs: readonly CostReceipt[] };

/** Limits of one attempt; see {@link RolloutChild.run}. */
export interface AttemptLimits {
  readonly hangMs: number;
  readonly killGraceMs: number;
  readonly abort: AttemptAbort;
  readonly deadline?: StageLimits;
  readonly onCost?: (receipt: CostReceipt) => Promise<void>;
}

/** The run's shared part of an attempt (rollout-definition.ts). */
export interface AttemptDefinition {
  readonly key: string;
  readonly bytes: number;
  /** Sent when the child does not hold `key`; may be left out when {@link RolloutChild.knows} said it does. */
  readonly definition?: RolloutDefinition;
}
