import type { CostReceipt } from '../spec/index.js';
import type { AttemptLimits, AttemptOutcome } from './attempt-outcome.js';
import type { DoneMessage } from './child-protocol.js';
import type { ExitVerdict } from './crash-blame.js';
import type { Overrun } from './stage-deadline.js';

/** One rollout running in a `RolloutChild` (rollout-child.ts). */
export interface InFlight {
  readonly seq: number;
  readonly slot: number;
  readonly limits: AttemptLimits;
  readonly costs: CostReceipt[];
  readonly settle: (outcome: AttemptOutcome) => void;
  /** The worker asked the child to abort it at `hangMs` (a shared child whose loop still turns). */
  hangAsked: boolean;
  overrun?: Overrun;
}

/**
 * How rollout `flight` ended when the child answered it (`done`): a crash the child caught in
 * its code, the abort the worker asked for, the abort asked at `hangMs` (hung), or its answer.
 * `reportedTail` gives stderr text with the child's secrets redacted (by default its tail).
 */
export function outcomeOfDone(flight: InFlight, message: DoneMessage, reportedTail: (text?: string) => string): AttemptOutcome {
  const { costs } = flight;
  const { reason } = flight.limits.abort;
  if (message.crash !== undefined) return { type: 'crashed', blame: 'self', exitCode: null, signal: null, stderrTail: reportedTail(message.crash), costs };
  if (reason !== undefined && message.error?.type === 'Aborted') return { type: 'aborted', reason, costs };
  if (flight.hangAsked && message.error?.type === 'Aborted') return { type: 'hung', hangMs: flight.limits.hangMs, stderrTail: reportedTail(), costs };
  return { type: 'done', done: message, costs };
}

/**
 * How rollout `flight` of a dead child ended, by its `verdict` (crash-blame.ts `blameExit`):
 * `exit` is the child's exit code and signal, `stderrTail` its redacted stderr tail.
 */
export function outcomeOfExit(flight: InFlight, verdict: ExitVerdict, exit: { code: number | null; signal: string | null } | undefined, stderrTail: string): AttemptOutcome {
  const { costs } = flight;
  const { reason } = flight.limits.abort;
  if (verdict.kind === 'aborted' || (verdict.kind === 'limit' && verdict.limit === 'abort')) return { type: 'aborted', reason: String(reason), costs };
  if (verdict.kind === 'limit' && verdict.limit === 'hang') return { type: 'hung', hangMs: flight.limits.hangMs, stderrTail, costs };
  if (verdict.kind === 'limit' && flight.overrun) return { type: 'overran', overrun: flight.overrun, stderrTail, costs };
  const blame = verdict.kind === 'crashed' ? verdict.blame : 'self';
  return { type: 'crashed', blame, exitCode: exit?.code ?? null, signal: exit?.signal ?? null, stderrTail, costs };
}
