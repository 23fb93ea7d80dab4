import { statSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../platform/logger.js';
import type { RolloutDraft } from './build-drafts.js';
import { workerAllowFlags } from './worker-allow-hint.js';
import { collectResults, type CollectOutcome } from './collect-results.js';
import type { CliEnvironment } from './environment.js';
import { CliError, EXIT, type ExitCode } from './errors.js';
import { fileErrorText } from './file-error.js';
import { fingerprintDifference } from './check-drafts.js';
import { MSG } from './messages.js';
import type { MetricsEndpoint } from '../platform/metrics-endpoint.js';
import { coordinatorLogger, openQueue, readStatus, serveCoordinatorMetrics, type RolloutQueue, type RunStop } from './plane.js';
import { watchNoWorker } from './no-worker-watch.js';
import { createProgress } from './progress.js';
import { ResultsFile } from './results-file.js';
import { formatSummary, type RunEnd } from './summary.js';
import { queuesWithRun, runNotFound } from './queue-usage.js';
import { refusalLine } from './refusal-line.js';
import { leaseIdFor } from '../lease/index.js';

/** Where a run's results come from: new drafts (also a restart of the same run id) or an attach. */
export type RunSource =
  | { readonly kind: 'map'; readonly drafts: readonly RolloutDraft[]; readonly maxInFlight?: number; readonly maxSpecBytes?: number; readonly fingerprint?: string; readonly weight?: number }
  | { readonly kind: 'attach' };

/** Options of {@link executeRun}. */
export interface ExecuteRunOptions {
  readonly env: CliEnvironment;
  readonly queue: string;
  readonly runId: string;
  /** Results file path. */
  readonly out: string;
  readonly source: RunSource;
  /** Aborted on Ctrl-C: stop collecting, print the summary so far and how to resume. */
  readonly interrupt?: AbortSignal;
  /** Where the summary goes (default stdout); progress and notes go to stderr. */
  readonly stdout?: NodeJS.WritableStream;
  readonly stderr?: NodeJS.WriteStream;
  readonly logger?: Logger;
  /** Say how to resume after an interrupt (default true; the demo stops its workers instead). */
  readonly resumeHint?: boolean;
  /** Warn once when no worker serves the queue (default true; the demo starts its own). */
  readonly warnNoWorker?: boolean;
  /** Retention of the delivered run, ms (default: the producer's, 3 days). */
  readonly retainMs?: number;
  /** Producer option costCeilingUsd (`run --cost-ceiling-usd`). */
  readonly costCeilingUsd?: number;
  /** Serve coordinator metrics (`CoordinatorMetrics`) here while the run lasts; default none. */
  readonly metrics?: CoordinatorMetricsAddress;
}

/** Where `run --metrics-port` serves the coordinator's metrics. */
export interface CoordinatorMetricsAddress {
  readonly port: number;
  readonly host: string;
}

/**
 * `run` again with a run id is how a run is resumed, with the same tasks file: a run id that
 * already names a run of another number of specs, or of specs made from other inputs (its
 * stored `sourceFingerprint` differs), would merge two task sets into one record and show the
 * old Results as the new ones' (the library allows growing a run on purpose; the CLI's run id
 * stands for one tasks file). A run made before fingerprints were stored is compared by count only.
 * @throws CliError (usage) naming what differs and the fix.
 */
async function refuseOtherTasks(q: RolloutQueue, runId: string, queue: string, specs: number, fingerprint: string | undefined): Promise<void> {
  const existing = (await q.status(runId)).run;
  if (existing && existing.specCount !== null && existing.specCount !== specs) {
    throw new CliError(MSG.runIdHoldsOtherTasks(runId, queue, existing.status, existing.specCount, specs), EXIT.usage);
  }
  if (existing && fingerprint !== undefined && existing.sourceFingerprint !== null && existing.sourceFingerprint !== fingerprint) {
    throw new CliError(MSG.runIdHoldsOtherInputs(runId, queue, existing.status, fingerprintDifference(existing.sourceFingerprint, fingerprint)), EXIT.usage);
  }
}

/**
 * A run whose every Result was delivered has none left for a new file: collecting into one made
 * an empty file, a summary of "0 of N, incomplete", and stored that file as the run's results
 * file, so every later hint named it (fresh-user report). A file that holds something is left to
 * the normal path: it is the idempotent re-run into the run's own file, or that file moved.
 * @returns the run's record in Redis, undefined when Redis has no such run.
 * @throws CliError (exit 1) naming where the Results went.
 */
async function refuseDeliveredElsewhere(q: RolloutQueue, runId: string, out: string, splitCheck: (previous: string | null) => void): Promise<{ readonly delivered: number } | undefined> {
  const { run, delivering } = await readStatus(q, runId);
  // While another coordinator delivers, this one waits and is refused as busy (naming it), or
  // takes over when it dies: then `checkPreviousNote` asks again.
  if (run && run.status !== 'completed' && delivering !== true) splitCheck(run.coordinatorNote);
  if (!run || !deliveredInFull(run)) return run ?? undefined;
  let size = 0;
  try {
    size = statSync(out).size;
  } catch {
    // No such file yet: it would be created empty.
  }
  if (size > 0) return run;
  throw new CliError(MSG.runDeliveredElsewhere(runId, run.delivered, run.coordinatorNote, out));
}

/**
 * One run's Results, one file: a coordinator of a run whose previous coordinator filled another
 * results file (its note) would deliver the rest into `out`, splitting the run in two and ending
 * "incomplete" without naming the other file (fresh-user report: a second `run --out b.jsonl`
 * that waited took over when the first, writing a.jsonl, was killed). Checked at the start when
 * no coordinator delivers the run (`refuseDeliveredElsewhere`), and once the run is held
 * (`checkPreviousNote`): the previous file may have filled while this one waited. A previous file that is gone or empty here (lost, or
 * on another host) does not refuse: there is nothing to split from.
 * @returns the check, throwing CliError (exit 1) naming that file, its count and the command.
 */
function refuseSplitResults(runId: string, queue: string, out: string, command: 'run' | 'resume'): (previous: string | null) => void {
  const ours = path.resolve(out);
  return (previous) => {
    if (previous === null || previous === ours) return;
    const held = ResultsFile.resultsOf(previous, runId);
    if (held > 0) throw new CliError(MSG.runResultsElsewhere(runId, queue, previous, held, out, command));
  };
}

/** True when the run is completed and every one of its Results was delivered. */
function deliveredInFull(run: { readonly status: string; readonly specCount: number | null; readonly delivered: number }): boolean {
  return run.status === 'completed' && run.specCount !== null && run.delivered >= run.specCount;
}

/** Longest wait for closing the queue or reading counters after an interrupt, ms. */
const WIND_DOWN_MS = 3000;

/** Results of the run's still running rollouts that are not in `file` yet (undefined: not known within WIND_DOWN_MS). */
async function runningLeft(q: RolloutQueue, runId: string, file: ResultsFile): Promise<number | undefined> {
  return (await within(q.pendingResults(runId), WIND_DOWN_MS))?.filter((leaseId) => !file.has(leaseId)).length;
}

/** `promise`'s value, or undefined when it fails or takes longer than `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  const late = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref());
  return Promise.race([promise.catch(() => undefined), late]);
}

/**
 * The one code path of `run`, `resume` and `demo`: open the queue, open (or re-open) the
 * results file, collect results with a progress display, print the summary.
 * @returns 0 when every spec has its line, 3 when stopped on a caller result, 130 when
 *   interrupted, 1 when the run ended with results missing.
 * @throws CliError when `resume` names a run that does not exist.
 */
export async function executeRun(options: ExecuteRunOptions): Promise<ExitCode> {
  const { env, queue, runId, source } = options;
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const logger = options.logger ?? coordinatorLogger('coordinator');
  // `resume` (attach) enqueues nothing: a misspelt --queue must not become a queue (fresh-user report).
  const q = await openQueue(env, queue, logger, {
    maxInFlight: source.kind === 'map' ? source.maxInFlight : undefined,
    maxSpecBytes: source.kind === 'map' ? source.maxSpecBytes : undefined,
    retainMs: options.retainMs,
    costCeilingUsd: options.costCeilingUsd,
    writeQueueMeta: source.kind === 'map',
  });
  let file: ResultsFile | undefined;
  let outcome: CollectOutcome | undefined;
  let stopWatching = (): void => undefined;
  let endpoint: MetricsEndpoint | undefined;
  try {
    if (options.metrics) {
      endpoint = await serveCoordinatorMetrics(q, runId, options.metrics);
      stderr.write(`${MSG.coordinatorMetrics(`http://${options.metrics.host.includes(':') ? `[${options.metrics.host}]` : options.metrics.host}:${endpoint.port}/metrics`)}\n`);
    }
    if (source.kind === 'map') await refuseOtherTasks(q, runId, queue, source.drafts.length, source.fingerprint);
    const total = source.kind === 'map' ? source.drafts.length : await attachTotal(q, options);
    const checkPreviousNote = refuseSplitResults(runId, queue, options.out, source.kind === 'map' ? 'run' : 'resume');
    const existing = await refuseDeliveredElsewhere(q, runId, options.out, checkPreviousNote);
    const known = existing !== undefined;
    if (options.warnNoWorker !== false) {
      const workers = await within(readStatus(q), WIND_DOWN_MS);
      const allowFlags = source.kind === 'map' ? workerAllowFlags(source.drafts) : '';
      if (workers && workers.workers.length === 0) stderr.write(`${MSG.noWorker(queue, env.prefix, allowFlags)}\n`);
      stopWatching = watchNoWorker(q, queue, env.prefix, stderr, undefined, allowFlags);
    }
    file = ResultsFile.open(options.out, runId);
    if (file.reopened.count > 0 || file.reopened.droppedPartial) {
      stderr.write(`${MSG.resultsReopened(file.path, file.reopened.count, file.reopened.droppedPartial)}\n`);
    }
    // The file says the run existed, Redis does not: purged, past its retention, or lost. Its
    // tasks all run again and the file keeps its old Results, whatever inputs made them (the file
    // does not record them; fresh-user report: changed tasks after a purge, old Results kept, exit 0).
    if (source.kind === 'map' && !known && file.reopened.count > 0) {
      // Not gone: on another queue of the prefix (fresh-user report: "Redis has no run c1 any
      // more", exit 0, for a run on --queue cliq run again without --queue).
      if ((await queuesWithRun(env, queue, runId)).length > 0) throw await runNotFound(env, queue, runId);
      // Every task already has its Result there: nothing runs again, as for a run Redis still
      // has completed (fresh-user report: after a purge, the same command ran all 240 tasks
      // again and threw every new Result away).
      if (everyLeaseIn(file, runId, source.drafts)) {
        stderr.write(`${MSG.resultsAllInFileOfGoneRun(file.path, runId, source.drafts.length)}\n`);
        stdout.write(`${formatSummary({ runId, total, end: 'completed', tally: file.tally, counters: undefined, file: file.path })}\n`);
        return EXIT.ok;
      }
      stderr.write(`${MSG.resultsOfGoneRun(file.path, runId, file.reopened.count)}\n`);
    }
    stderr.write(`${source.kind === 'map' ? MSG.runStarting(runId, total ?? 0, queue, env.address) : MSG.runResuming(runId, queue, env.address)}\n`);
    // `run --run-id` of a run that delivered some leases before: README's recovery after a crash,
    // said as progress when it starts (fresh-user report: a warning pointing at a new runId).
    if (source.kind === 'map' && existing && existing.delivered > 0) stderr.write(`${MSG.runReattached(runId, existing.delivered, source.drafts.length)}\n`);
    const progress = createProgress({ total, initial: file.count, stream: stderr });
    // The run's results file, stored with the run once this coordinator holds it, for every later
    // hint that names resume (status, a coordinator refused as busy): one run's Results, one file.
    const coordinatorNote = path.resolve(file.path);
    const results = source.kind === 'map'
      ? q.mapRollouts(source.drafts, {
        runId,
        specCount: source.drafts.length,
        coordinatorNote,
        checkPreviousNote,
        // The CLI's run id stands for one tasks file (refuseOtherTasks): leases delivered before
        // are a re-attach after a crash, said above as progress, not the library's warning.
        reattach: true,
        ...(source.fingerprint !== undefined ? { sourceFingerprint: source.fingerprint } : {}), ...(source.weight !== undefined ? { weight: source.weight } : {}) })
      : q.attach(runId, { coordinatorNote, checkPreviousNote });
    try {
      outcome = await collectResults(results, file, progress, options.interrupt);
    } finally {
      progress.stop();
    }
    if (outcome.kind === 'writeFailed') {
      throw new CliError(MSG.resultsWriteFailed(file.path, fileErrorText(outcome.error), runId, queue));
    }
    if (outcome.kind === 'refused') {
      // It delivered nothing: a summary would show the other coordinator's Results as this one's,
      // and a results file it created for them stays empty: nothing is left behind.
      file.discardIfUnused();
      const holderFile = (await within(readStatus(q, runId), WIND_DOWN_MS))?.run?.coordinatorNote ?? undefined;
      throw new CliError(MSG.coordinatorRefused(runId, queue, source.kind === 'map' ? 'run' : 'resume', outcome.holder, holderFile));
    }
    // Redis refused a write (at maxmemory, or a replica) before this session delivered anything:
    // its one line, and nothing left behind (fresh-user report: "Run fd: 0 of 6, failed", a
    // script hash and a resume of a run that was never made).
    const refusal = outcome.kind === 'failed' ? refusalLine(outcome.error) : undefined;
    if (refusal !== undefined && file.count === file.reopened.count) {
      file.discardIfUnused();
      throw new CliError(refusal);
    }
    file.refresh();
    const status = await within(readStatus(q, runId), WIND_DOWN_MS);
    const run = status?.run;
    if (outcome.kind === 'completed' && file.count === 0 && run && deliveredInFull(run)) {
      // Waiting for the lease, this coordinator saw another finish the run: the same refusal as
      // at the start (see refuseDeliveredElsewhere), not a summary of "0 of N, incomplete".
      file.discardIfUnused();
      throw new CliError(MSG.runDeliveredElsewhere(runId, run.delivered, run.coordinatorNote, file.path));
    }
    if (outcome.kind === 'failed' && outcome.error instanceof CliError) {
      // Refused by one of our own checks (checkPreviousNote) before anything was delivered: no
      // summary of a run this coordinator never delivered, and no file made for it.
      file.discardIfUnused();
      throw outcome.error;
    }
    const end = runEnd(outcome, file.count, total);
    stdout.write(`${formatSummary({
      runId,
      total,
      end,
      tally: file.tally,
      counters: run ? { redispatched: run.redispatched, duplicatesDropped: run.duplicatesDropped } : undefined,
      file: file.path,
      ...(outcome.kind === 'stopped' ? { stop: stopOf(outcome) } : {}),
    })}\n`);
    if (outcome.kind === 'stopped') {
      const error = outcome.result?.error;
      // As after a cancel: how many running rollouts' Results are still to collect, and the command (fresh-user report).
      const left = await runningLeft(q, runId, file);
      const rest = left ? `\n${MSG.runningUndelivered(runId, queue, left, file.path, 'stopped')}` : '';
      stderr.write(`${outcome.leaseId && error ? MSG.runStopped(outcome.leaseId, error.type, error.message) : MSG.runStoppedEarlier(outcome.message)}${rest}\n`);
      return EXIT.stopped;
    }
    if (outcome.kind === 'interrupted') {
      // A run of a tasks file knows how many of its specs are enqueued, and so does a resumed run
      // whose record holds its spec count: say which command finishes it (fresh-user report: a
      // resume always added "if not every task was enqueued yet, …").
      const specCount = source.kind === 'map' ? source.drafts.length : run?.specCount ?? null;
      const notEnqueued = run && specCount !== null ? Math.max(0, specCount - run.enqueued) : undefined;
      if (options.resumeHint !== false) stderr.write(`${MSG.runInterrupted(runId, file.path, queue, notEnqueued)}\n`);
      return EXIT.interrupted;
    }
    if (outcome.kind === 'cancelled') {
      // Rollouts that were running when it was cancelled still end in a Result, after this one stops delivering.
      const left = await runningLeft(q, runId, file);
      const rest = left ? `\n${MSG.runningUndelivered(runId, queue, left, file.path, 'cancelled')}` : '';
      throw new CliError(`${MSG.runWasCancelled(runId, outcome.reason)}${rest}`);
    }
    if (outcome.kind === 'failed') throw failure(outcome.error, options);
    if (end === 'completed') return EXIT.ok;
    stderr.write(`${MSG.runIncomplete(runId, file.count, total ?? 0, file.path, queue)}\n`);
    return EXIT.failure;
  } finally {
    stopWatching();
    await endpoint?.close();
    file?.close();
    if (outcome?.kind === 'interrupted' || outcome?.kind === 'writeFailed') await within(q.close(), WIND_DOWN_MS);
    else await q.close();
  }
}

/** Whether `file` holds a Result of every draft's lease (drafts of `run`, each with its `taskKey`). */
function everyLeaseIn(file: ResultsFile, runId: string, drafts: readonly RolloutDraft[]): boolean {
  return drafts.every((draft) => draft.taskKey !== undefined && file.has(leaseIdFor(runId, draft.taskKey)));
}

async function attachTotal(q: RolloutQueue, options: ExecuteRunOptions): Promise<number | null> {
  const status = await readStatus(q, options.runId);
  if (!status.run) {
    // The results file says the run existed: Redis no longer has it (fresh-user report: after
    // Redis lost its data, resume said only "check the id").
    const held = ResultsFile.resultsOf(options.out, options.runId);
    if (held > 0 && (await queuesWithRun(options.env, options.queue, options.runId)).length === 0) {
      throw new CliError(MSG.resumeRunGone(options.runId, options.queue, options.out, held));
    }
    throw await runNotFound(options.env, options.queue, options.runId, MSG.resumeRunLost(options.runId, options.queue));
  }
  return status.run.specCount;
}

/** The CLI error for a producer failure after the summary was printed. */
function failure(error: Error, options: ExecuteRunOptions): CliError {
  const refusal = refusalLine(error);
  if (refusal !== undefined) return new CliError(MSG.runRefused(options.runId, refusal, options.queue, options.out));
  // The producer's attach ends with a plain Error when specs were never enqueued (see
  // RolloutQueue.attach); only re-running `run` with the specs can finish such a run.
  if (neverEnqueued(error)) return new CliError(MSG.resumeNeedsSpecs(options.runId, error.message, options.queue, options.out));
  return new CliError(MSG.runFailed(options.runId, error.message, options.queue, options.out));
}

/** The producer's attach found specs of the run never enqueued (its `run` stopped while enqueuing). */
function neverEnqueued(error: Error): boolean {
  return /never enqueued/.test(error.message);
}

/** The lease and reason of a stop for the summary: the caller Result's error (redacted, as every Result's), else the stop's message. */
function stopOf(stop: RunStop): { leaseId: string | null; reason: string } {
  const error = stop.result?.error;
  return stop.leaseId && error ? { leaseId: stop.leaseId, reason: `${error.type}: ${error.message}` } : { leaseId: stop.leaseId, reason: stop.message };
}

function runEnd(outcome: CollectOutcome, count: number, total: number | null): RunEnd {
  if (outcome.kind === 'stopped') return 'stopped on a caller result';
  if (outcome.kind === 'interrupted') return 'interrupted';
  if (outcome.kind === 'cancelled') return 'cancelled';
  // Nothing failed: the run goes on once `run` enqueues the rest (fresh-user report: "550 of 3000, failed").
  if (outcome.kind === 'failed' && neverEnqueued(outcome.error)) return 'incomplete';
  if (outcome.kind === 'failed' || outcome.kind === 'writeFailed' || outcome.kind === 'refused') return 'failed';
  return total === null || count >= total ? 'completed' : 'incomplete';
}
