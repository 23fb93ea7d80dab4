/**
 * What a `mapRollouts` call tells of a run id used before: drafts whose leases the run had
 * delivered are neither run nor yielded again (a lease has one Result, delivered once), so a loop
 * re-scoring its incumbent under the same run id would get no Result for them. Handed to
 * `MapRolloutsOptions.onDeliveredBefore` (and logged as a warning) once every draft was read.
 * To score the same candidate again, use a new run id; to have repeats answered from a cache
 * instead of run, give the drafts `class: 'evaluation'` (cached by content: rendered, task, run
 * and reward; meta left out).
 */
export interface RunReuse {
  readonly runId: string;
  /** Leases of this call's drafts that the run delivered before this call. */
  readonly deliveredBefore: number;
  /** Distinct leases of this call's drafts (refused ones included). */
  readonly leases: number;
  /** True when every lease of this call was delivered before: the call yields no Result at all. */
  readonly nothingNew: boolean;
}

/** The warning logged with a {@link RunReuse} (one line, counts and the two ways out). */
export function runReuseText(reuse: RunReuse): string {
  const drafts = `${reuse.leases} draft${reuse.leases === 1 ? '' : 's'}`;
  const which = reuse.nothingNew ? `every one of this call's ${drafts}` : `${reuse.deliveredBefore} of this call's ${drafts}`;
  return `run "${reuse.runId}": ${which} named a lease the run delivered before, neither run nor yielded again (even if changed)${reuse.nothingNew ? ', so this call yields no Result' : ''}; ` +
    'use a new runId to run them again, or give the drafts class "evaluation" to have repeats answered from the evaluation cache';
}

/**
 * The progress line logged (at info) with a {@link RunReuse} of a `reattach` call: the run's own
 * drafts again, so what was delivered before is simply not collected twice.
 */
export function runReattachText(reuse: RunReuse): string {
  const rest = reuse.leases - reuse.deliveredBefore;
  return reuse.nothingNew
    ? `re-attached to run "${reuse.runId}": all ${reuse.leases} already delivered, nothing left to collect`
    : `re-attached to run "${reuse.runId}": ${reuse.deliveredBefore} of ${reuse.leases} already delivered, collecting the other ${rest}`;
}
