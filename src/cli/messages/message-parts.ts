import { cliCommand, shellWord } from '../cli-command.js';
import type { QueuesUsed } from '../queues-used.js';

/** Pieces several message groups share: hints to paste (`resume`, `--queue`), summary rows, type names. */

/** Names listed at most by {@link nameList} unless a caller says otherwise. */
export const MAX_NAMES_LISTED = 5;

/**
 * A list of names (queues, prefixes, leases, runs, files) for a message: the first `max` joined
 * with ", ", then "and N more" for the rest. Every list a message takes from Redis or disk goes
 * through it, since their length has no bound (fresh-user report: `cancel noworker1 --queue
 * emptyq` on a Redis with 60+ queues printed every queue name on one line).
 * @param names already quoted or formatted as they should read.
 * @returns '' for no names.
 */
export function nameList(names: readonly string[], max: number = MAX_NAMES_LISTED): string {
  const shown = names.slice(0, max).join(', ');
  return names.length > max ? `${shown} and ${names.length - max} more` : shown;
}

/** Where queues were used, for the lines about a queue nothing used: under its prefix, else under others. */
export function queuesUsedThere(used: QueuesUsed): string {
  if (used.queues.length > 0) return `queues used there: ${nameList(used.queues)}`;
  if (used.elsewhere.size === 0) return 'no queue there was used yet';
  const prefixes = [...used.elsewhere].map(([prefix, queues]) => `"${prefix}" (${nameList(queues)})`);
  return `no queue there was used yet; prefixes used in this Redis: ${nameList(prefixes)}; set ROLLOUT_QUEUE_PREFIX to one of them`;
}

/** Short type name of a value for error messages ("array", "null", "string"). */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** The `resume` command that collects a run into `out`, its results file (`FILE` when unknown: see {@link unknownFileNote}). */
export function resumeInto(runId: string, queue: string, out: string | undefined): string {
  return `${cliCommand()} resume ${runId}${queueFlag(queue)} --out ${out === undefined ? 'FILE' : shellWord(out)}`;
}

/** What FILE of {@link resumeInto} is when the run's coordinator named no results file (a run of the library). */
export function unknownFileNote(runId: string, out: string | undefined): string {
  return out === undefined
    ? `\n  where FILE is the results file its run command wrote (--out; results-${runId}.jsonl in its directory without one), so its Results stay in one file;` +
        ` a run of the library recorded no file: its program collects the rest with queue.attach("${runId}")`
    : '';
}

/** ` --queue <q>` when `queue` is not the default one, else empty (for commands users copy). */
export function queueFlag(queue: string | undefined): string {
  return queue && queue !== 'rollouts' ? ` --queue ${queue}` : '';
}

/** One `label  value` row of the summary, labels in one column. */
export function summaryRow(label: string, value: string): string {
  return `  ${label.padEnd(20)}${value}`;
}
