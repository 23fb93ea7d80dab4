import type { ErrorInfo } from '../spec/index.js';
import type { ExitInfo } from './lease-ledger.js';
import { tail } from './rollout-facts.js';

/**
 * What happened on every attempt of a lease that ran out of re-dispatches, by the last
 * attempt's reason, where "the worker died" would be wrong (fresh-user report: a lease past
 * `timeouts.hangMs` on every attempt read "the worker died repeatedly").
 */
const REPEATED: Readonly<Record<string, string>> = {
  Hang: 'its rollout stopped answering on every attempt and was killed at timeouts.hangMs each time',
  ChildCrashed: "its rollout's process crashed on every attempt",
};

/**
 * The error of an `infrastructure` Result for a lease ended by the re-dispatch limit
 * (`maxRedispatches`), from its last attempt's exit (`last`, its stderr tail already redacted).
 */
export function quarantineError(leaseId: string, maxRedispatches: number, last: ExitInfo): ErrorInfo {
  const ownText = last.reason === 'MissingSecret' || last.reason === 'VersionSkew' || last.reason === 'Transient';
  const why = last.reason === 'MissingSecret' || last.reason === 'VersionSkew'
    ? last.stderrTail
    : last.reason === 'Transient'
      ? `it failed transiently on every attempt (last: ${last.stderrTail})`
      : `${REPEATED[last.reason] ?? 'the worker died repeatedly while running it'} (last: ${last.reason}, exit code ${last.exitCode}, signal ${last.signal})`;
  // A version skew on every worker that took it is named as such: the fix is an install, not a retry.
  return { type: last.reason === 'VersionSkew' ? 'VersionSkew' : 'RedispatchLimit', message: `lease ${leaseId} ended after ${maxRedispatches} re-dispatches: ${why}${last.stderrTail && !ownText ? `\nstderr tail:\n${tail(last.stderrTail, 1000)}` : ''}` };
}
