import type { ResultKind } from '../spec/index.js';
import { MSG } from './messages.js';
import type { QueuesUsed } from './queues-used.js';
import { formatCost } from './summary.js';
import type { StatusView } from './plane.js';

/** Where the status was read, for its heading. */
export interface StatusPlace {
  readonly queue: string;
  readonly prefix: string;
  readonly address: string;
  /** Run ids known on the queue (newest last). */
  readonly runs: readonly string[];
  /** Set when nothing ever used this queue (no job, worker, run or BullMQ meta): where queues were used. */
  readonly unused?: QueuesUsed;
}

const KINDS: readonly ResultKind[] = ['ok', 'model', 'infrastructure', 'caller'];
/** Runs `status` names without a run id (the newest: the list comes oldest first); `--json` lists every one. */
const MAX_RUNS_LISTED = 20;

const row = (label: string, value: unknown): string => `  ${label.padEnd(20)}${String(value)}`;
const text = (value: unknown): string => (value === undefined || value === null || value === '' ? '-' : String(value));

/** The status as JSON data (`status --json`). */
export function statusJson(view: StatusView, place: StatusPlace): Record<string, unknown> {
  return {
    queue: place.queue,
    prefix: place.prefix,
    address: place.address,
    counts: view.counts,
    workers: view.workers.map((worker) => ({ name: worker.name, ...withSeconds(worker.details) })),
    placements: view.placements ?? [],
    shares: view.shares ?? [],
    ...(view.cost ? { cost: view.cost } : {}),
    runs: place.runs,
    ...(place.unused
      ? { queueUsed: false, otherQueues: place.unused.queues, ...(place.unused.elsewhere.size > 0 ? { otherPrefixes: Object.fromEntries(place.unused.elsewhere) } : {}) }
      : {}),
    run: view.run ?? null,
    ...(view.delivering !== undefined ? { delivering: view.delivering } : {}),
    ...(view.coordinator ? { coordinator: view.coordinator } : {}),
    ...(view.coordinatorGone !== undefined ? { coordinatorGone: view.coordinatorGone } : {}),
    ...(view.resultsFile !== undefined ? { resultsFile: view.resultsFile } : {}),
    ...(view.undelivered !== undefined ? { undelivered: view.undelivered } : {}),
  };
}

/**
 * A worker's details for `--json`: `age` and `idle` (CLIENT LIST seconds, which BullMQ hands on
 * as strings) as numbers, so a script compares them without parsing; the rest as they are.
 */
function withSeconds(details: Readonly<Record<string, string>>): Record<string, string | number> {
  const out: Record<string, string | number> = { ...details };
  for (const field of ['age', 'idle'] as const) {
    const value = details[field];
    if (value !== undefined && /^\d+$/.test(value)) out[field] = Number(value);
  }
  return out;
}

/**
 * The status as text: jobs by state and connected workers of the queue; for a run, its state,
 * results by kind, counters and quarantined leases (exit code, signal, stderr tail).
 */
export function formatStatus(view: StatusView, place: StatusPlace): string {
  const lines = [MSG.statusQueue(place.queue, place.prefix, place.address)];
  if (place.unused) lines.push(MSG.statusQueueUnused(place.queue, place.prefix, place.unused));
  lines.push(MSG.statusJobs);
  // Fair share (docs/fair-share.md) parks a run's new jobs in BullMQ's `prioritized` set: to a user
  // they are waiting all the same, so the text shows them in the waiting row (--json keeps both).
  const { prioritized = 0, ...others } = view.counts;
  const states = Object.entries('prioritized' in view.counts ? { waiting: 0, ...others } : others);
  for (const [state, count] of states) {
    if (state === 'waiting') lines.push(`${row(state, count + prioritized)}${MSG.statusWaitingInFairShare(prioritized)}`);
    else lines.push(row(state, count));
  }
  if (states.length === 0) lines.push(row('(none)', 0));
  lines.push(MSG.statusWorkers(view.workers.length));
  // Not for a queue nothing used while others were: the hint would start a worker on a misspelt name.
  if (view.workers.length === 0 && !(place.unused && place.unused.queues.length > 0)) lines.push(MSG.statusNoWorkers(place.queue));
  for (const worker of view.workers) {
    const details = Object.entries(worker.details).map(([key, value]) => `${key}=${value}`);
    lines.push(`  ${worker.name}${details.length > 0 ? `  ${details.join(' ')}` : ''}`);
  }
  const placements = view.placements ?? [];
  if (placements.length > 0) {
    lines.push(MSG.statusPlacements(placements.length));
    for (const p of placements) {
      lines.push(MSG.statusPlacementLine(p.labels, place.queue, p.class, p.waiting, p.active, p.workers));
    }
  }
  const shares = view.shares ?? [];
  if (shares.length > 0) {
    lines.push(MSG.statusShares(shares.length));
    for (const s of shares) lines.push(MSG.statusShareLine(s.runId, s.weight, s.waiting, s.active, s.activeShare, s.fairShare));
  }
  const { run } = view;
  if (!run) {
    if (place.runs.length > 0) lines.push(MSG.statusRuns(place.runs.slice(-MAX_RUNS_LISTED), place.runs.length));
    return lines.join('\n');
  }
  lines.push(MSG.statusRun(run.runId, run.status, run.createdAt));
  if (run.status === 'running' && view.coordinatorGone !== undefined) lines.push(MSG.statusCoordinatorGone(view.coordinatorGone));
  if (run.status === 'running' && (view.delivering === false || view.coordinatorGone !== undefined)) {
    const { specCount } = run;
    lines.push(specCount !== null && run.enqueued < specCount
      ? MSG.statusPartlyEnqueued(run.runId, run.enqueued, specCount, view.resultsFile)
      : MSG.statusUndelivered(run.runId, place.queue, view.resultsFile));
  }
  if (run.restoredAt) lines.push(MSG.statusRestored(run.restoredAt));
  if (run.stopReason) lines.push(MSG.statusStopReason(run.stopReason));
  if ((run.status === 'cancelled' || run.status === 'stopped') && view.delivering === false && (view.undelivered ?? 0) > 0) {
    lines.push(MSG.statusEndedUndelivered(run.runId, place.queue, run.status, view.undelivered ?? 0, view.resultsFile));
  }
  if (run.endedAt && run.retainMs !== null) lines.push(MSG.statusRetention(run.endedAt, new Date(Date.parse(run.endedAt) + run.retainMs).toISOString()));
  lines.push(row('specs', text(run.specCount)), row('enqueued', run.enqueued), row('delivered', run.delivered));
  // The job counts above cover finished jobs; these only delivered Results (fresh-user report:
  // "completed 240" above "ok 23" read as a contradiction on an interrupted run).
  lines.push(MSG.statusKindsOfDelivered);
  for (const kind of KINDS) lines.push(row(kind, run.kinds[kind]));
  if (view.cost) lines.push(row('cost', formatCost(view.cost)));
  lines.push(row('redispatched', run.redispatched), row('duplicates dropped', run.duplicatesDropped), row('already enqueued', run.alreadyEnqueued), row('truncated output', run.truncated));
  const quarantined = Object.entries(run.quarantined);
  lines.push(MSG.statusQuarantined(quarantined.length));
  for (const [leaseId, info] of quarantined) {
    const record = (info && typeof info === 'object' ? info : { reason: info }) as Record<string, unknown>;
    lines.push(MSG.statusQuarantineLine(leaseId, text(record.exitCode), text(record.signal), record.reason ? String(record.reason) : ''));
    if (record.stderrTail) lines.push(MSG.statusStderr(String(record.stderrTail).trim().split('\n').slice(-5).join('\n                 ')));
  }
  return lines.join('\n');
}
