import { withSpan } from '../platform/telemetry.js';
import { performance } from 'node:perf_hooks';
import { DelayedError, WaitingError, type Job } from 'bullmq';
import { enqueuedAtOf } from '../lease/index.js';
import type { Logger } from '../platform/logger.js';
import type { RedisClock } from '../platform/redis-clock.js';
import { isStoredRendered, parseRolloutSpec, redactSecrets, redactSecretsDeep, resultEnding, type CostReceipt, type ErrorInfo, type Rendered, type Result, type ResultKind, type RolloutSpec } from '../spec/index.js';
import type { ArtifactCache } from './artifact-cache.js';
import type { ChildPool } from './child-pool.js';
import { AttemptAbort } from './attempt-abort.js';
import { ChildStartError, type AttemptDefinition, type AttemptOutcome } from './rollout-child.js';
import { splitSpec } from './rollout-definition.js';
import { jsonTextOver } from './child-output.js';
import type { ExitInfo, LeaseLedger } from './lease-ledger.js';
import type { CompiledWorkerOptions } from './worker-options.js';
import { findVersionSkew } from './version-skew.js';
import { moveToDelayedOnRedisClock } from './delay-on-redis-clock.js';
import { CancelledRuns } from './cancelled-runs.js';
import { handBack, requeue, type HandBackDeps } from './lease-hand-back.js';
import { isLostOwnership } from './lost-ownership.js';
import { invalidSpecError, refusedJobResult, specTooLargeError } from './refused-job-result.js';
import { quarantineError } from './quarantine-error.js';
import { backoffMs, isTruncatedOutput, nearDeadline, secretsOf, tail, taskIdOf, warnShortSecrets } from './rollout-facts.js';

/** Abort reasons the worker gives a running rollout. */
export type AbortReason = 'cancelled' | 'lock-lost' | 'shutdown';

/** Hooks the processor reports through (metrics, duplicate accounting). */
export interface ProcessorEvents {
  onResult(kind: ResultKind, runMs: number | null): void;
  onRedispatch(cause: string): void;
  onStart(): void;
}

interface ActiveRollout {
  readonly runId: string;
  readonly runAttemptId: string;
  readonly abort: AttemptAbort;
}

/** How the running attempt of a lease started. */
interface AttemptStart {
  /** From enqueue to this attempt's start, by the Redis clock (null: enqueued by another client). */
  readonly queuedMs: number | null;
  /** The lease was involved in a crash of a shared child: it runs in a child of its own (see `LeaseLedger.noteSharedLoss`). */
  readonly alone: boolean;
  /**
   * The enqueue time (ms, Redis clock) of a first attempt that started without the ledger's
   * start script (see {@link RolloutProcessor.process}); undefined for every other attempt.
   */
  readonly enqueuedAt?: number;
}

/**
 * The BullMQ processor of a rollout worker. It runs in the worker's main process and never
 * runs rollout code: it parses the job, picks a child, enforces `hangMs`, and turns every
 * outcome into exactly one Result or one re-dispatch of the same lease id.
 */
export class RolloutProcessor {
  /** Rollouts running now, by lease id. */
  readonly active = new Map<string, ActiveRollout>();
  /** Leases whose Result was handed to BullMQ and not yet confirmed, by lease id → run id. */
  readonly finishing = new Map<string, string>();
  /** How the running attempt of each lease started. */
  private readonly starts = new Map<string, AttemptStart>();
  /** Runs seen cancelled (pub/sub or run record), for attempts starting later (see {@link abort}). */
  private readonly cancelledRuns = new CancelledRuns();
  /** What `handBack` and `requeue` report through. */
  private readonly handBackDeps: HandBackDeps;

  constructor(
    private readonly options: CompiledWorkerOptions,
    private readonly pool: ChildPool,
    private readonly ledger: LeaseLedger,
    private readonly logger: Logger,
    private readonly events: ProcessorEvents,
    private readonly artifacts: ArtifactCache,
    private readonly clock: RedisClock,
  ) {
    this.handBackDeps = { ledger, logger, onRedispatch: (cause) => events.onRedispatch(cause) };
  }

  /**
   * Aborts one rollout (lock lost), every rollout of a run (cancelled) or all (shutdown). A run's
   * cancel is remembered for rollouts of it starting later, for the attempt `runAttemptId` only
   * when given (null or omitted: every attempt of the run id).
   */
  abort(filter: { leaseId?: string; runId?: string; runAttemptId?: string | null }, reason: AbortReason): number {
    const attempt = filter.runAttemptId ?? null;
    if (reason === 'cancelled' && filter.runId) this.cancelledRuns.remember(filter.runId, attempt);
    let count = 0;
    for (const [leaseId, rollout] of this.active) {
      if ((filter.leaseId && filter.leaseId !== leaseId) || (filter.runId && filter.runId !== rollout.runId)) continue;
      if (filter.runId && attempt !== null && attempt !== rollout.runAttemptId) continue;
      if (rollout.abort.abort(reason)) count++;
    }
    return count;
  }

  /** The BullMQ processor function: `(job, token) → Result`. */
  readonly process = async (job: Job, token?: string): Promise<Result> => {
    const startedAt = Date.now();
    // Before the spec is checked or anything runs: a job written by another client has no
    // producer-side limit (issue 33: a 100 MB job was executed). Counted on the data BullMQ
    // already parsed, stopping at the limit (no copy of it is made).
    const limitBytes = this.options.maxSpecBytes;
    if (jsonTextOver(job.data, limitBytes)) return this.refused(job, specTooLargeError(job.id, limitBytes), `job over maxSpecBytes = ${limitBytes} reported as caller Result`);
    const parsed = parseRolloutSpec(job.data);
    if (!parsed.success) {
      // Another client, another language: a caller Result naming the bad paths.
      const { error, detail } = invalidSpecError(job.id, parsed.error.issues);
      return this.refused(job, error, 'malformed job reported as caller Result', { issues: detail });
    }
    let spec = parsed.data;
    if (spec.leaseId !== job.id) {
      return this.finish(job, spec, startedAt, { kind: 'caller', error: { type: 'InvalidSpec', message: `job id "${job.id}" differs from spec.leaseId "${spec.leaseId}"; add the job with jobId = leaseId` } });
    }
    const { overLimit, runStatus, start } = await this.noteStart(job, spec);
    try {
      return await this.attempt(job, token, spec, startedAt, overLimit, runStatus, start.alone);
    } finally {
      // A re-dispatched attempt of the same lease may already run here (BullMQ fetched it while
      // this one was still handing it back): never remove what belongs to that one.
      if (this.starts.get(spec.leaseId) === start) this.starts.delete(spec.leaseId);
    }
  };

  /** One attempt after its start was recorded: the checks before running it, the child, the Result. */
  private async attempt(job: Job, token: string | undefined, spec: RolloutSpec, startedAt: number, overLimit: boolean, runStatus: string | undefined, alone: boolean): Promise<Result> {
    // The run record says so, or this worker heard the cancel (pub/sub: a bare PUBLISH is the
    // whole contract, the record may never say `cancelled`).
    if (runStatus === 'cancelled' || this.cancelledRuns.heard(spec)) return this.cancelledBeforeStart(job, spec, startedAt);
    if (overLimit) {
      const { lastExit } = await this.ledger.read(spec.leaseId);
      return this.quarantine(job, spec, startedAt, lastExit);
    }
    const skew = findVersionSkew(spec.sandbox.requires);
    if (skew) {
      // Never run against the wrong code: another worker (another install) may satisfy it.
      const text = `worker "${this.options.name}" has ${skew.package} ${skew.installed ?? '(not installed)'}, outside sandbox.requires["${skew.package}"] = "${skew.range}"; run it on a worker with a matching install`;
      this.logger.error({ runId: spec.runId, leaseId: spec.leaseId, package: skew.package, range: skew.range, installed: skew.installed }, `version skew: ${text}`);
      return this.redispatch(job, token, spec, startedAt, { reason: 'VersionSkew', exitCode: null, signal: null, stderrTail: text }, { backoff: true });
    }
    const missing = spec.sandbox.env.filter((name) => process.env[name] === undefined);
    if (missing.length > 0) {
      // After the back-off, as a transient: handed straight back, the lease went to this same
      // worker again at once and used up its whole budget in 45 ms, before a busy worker of the
      // fleet that has the secret could take it (fresh-user report). An idle worker without it may
      // still take it again: placement is what routes a lease to the workers that can run it.
      return this.redispatch(job, token, spec, startedAt, {
        reason: 'MissingSecret',
        exitCode: null,
        signal: null,
        stderrTail: `worker "${this.options.name}" has no environment variable ${missing.join(', ')} (named in sandbox.env); set it on the worker, or send these leases only to workers that have it with a placement label (worker --placement KEY=VALUE, and the same placement on the drafts)`,
      }, { backoff: true });
    }
    const secrets = warnShortSecrets(Object.fromEntries(spec.sandbox.env.map((name) => [name, process.env[name] as string])), this.logger, spec);
    // A cancel heard since the start was noted (the ledger's round trip, the artifact's fetch)
    // found no active rollout of this lease to abort: honoured here, with no await between this
    // check and the lease becoming active, so no message falls in between.
    if (this.cancelledRuns.heard(spec)) return this.cancelledBeforeStart(job, spec, startedAt);
    const active = { runId: spec.runId, runAttemptId: spec.runAttemptId, abort: new AttemptAbort() };
    this.active.set(spec.leaseId, active);
    this.events.onStart();
    try {
      const solo = alone || spec.sandbox.isolation === 'process';
      let child;
      try {
        child = await this.pool.acquire(spec.sandbox.memoryMb, { solo });
      } catch (err) {
        if (!(err instanceof ChildStartError)) throw err;
        this.logger.error({ runId: spec.runId, leaseId: spec.leaseId, exitCode: err.exitCode, signal: err.signal, stderrTail: tail(err.stderrTail, 500) }, 'rollout child failed to start');
        return await this.redispatch(job, token, spec, startedAt, { reason: 'ChildStartFailed', exitCode: err.exitCode, signal: err.signal, stderrTail: tail(err.stderrTail) });
      }
      let outcome: AttemptOutcome;
      let runStarted: number;
      try {
        const split = splitSpec(spec, secrets);
        let definition: AttemptDefinition = { key: split.key, bytes: split.bytes };
        // The run's shared part reaches a child once: a child that holds it gets the task and lease alone.
        if (!child.knows(split.key)) {
          let rendered: Rendered | undefined;
          if (isStoredRendered(spec.rendered)) {
            rendered = await this.artifacts.resolve(spec.runId, spec.rendered);
            if (!rendered) {
              return await this.finish(job, spec, startedAt, { kind: 'infrastructure', error: { type: 'ArtifactMissing', message: `the stored artifact ${spec.rendered.sha256} of run ${spec.runId} is gone from Redis (the run was purged or its retention ended); re-run the spec under a new run id` } });
            }
          }
          definition = { ...definition, definition: split.definition(rendered) };
        }
        // The worker's monotonic clock: an NTP step during the rollout cannot bend runMs.
        runStarted = performance.now();
        // Tracing on: a span of this attempt (child of BullMQ's process span), handed to the child.
        const run = (traceparent: string | undefined): Promise<AttemptOutcome> => child.run(
          definition,
          { ...split.own, ...(traceparent ? { traceparent } : {}), taskId: taskIdOf(spec), attempt: job.attemptsStarted || 1 },
          {
            hangMs: spec.timeouts.hangMs,
            killGraceMs: this.options.killGraceMs,
            abort: active.abort,
            deadline: { runMs: spec.timeouts.runMs, rewardMs: spec.timeouts.rewardMs, graceMs: this.options.deadlineGraceMs },
            onCost: (receipt) => this.ledger.recordCosts(spec.leaseId, redactSecretsDeep([receipt], secrets) as CostReceipt[]),
          },
        );
        outcome = this.options.tracing
          ? await withSpan('rollout.child', { 'rollout.lease_id': spec.leaseId, 'rollout.attempt': job.attemptsStarted || 1, 'process.pid': child.pid ?? -1 }, run)
          : await run(undefined);
      } finally {
        // Retiring (and replacing) a worn child happens in the background, never before the reply.
        this.pool.release(child);
      }
      await this.ledger.recordCosts(spec.leaseId, redactSecretsDeep(outcome.costs, secrets) as CostReceipt[]);
      return await this.settle(job, token, spec, startedAt, Math.round(performance.now() - runStarted), outcome);
    } finally {
      if (this.active.get(spec.leaseId) === active) this.active.delete(spec.leaseId);
    }
  }

  /** The Result of a lease of a cancelled run that never ran here. */
  private cancelledBeforeStart(job: Job, spec: RolloutSpec, startedAt: number): Promise<Result> {
    return this.finish(job, spec, startedAt, { kind: 'caller', error: { type: 'Cancelled', message: 'the run was cancelled before this rollout started' } });
  }

  /**
   * Records the start of an attempt. The first attempt of a job this project's producer added
   * (it carries its enqueue time, `enqueuedAtOf`; BullMQ counted no start before it and no stall)
   * has nothing to count: its `queuedMs` comes from the extrapolated Redis clock and a
   * cancellation from what this worker heard (pub/sub, run records), without a round trip.
   * Every other attempt runs the ledger's start script (stalls become re-dispatches).
   */
  private async noteStart(job: Job, spec: RolloutSpec): Promise<{ overLimit: boolean; runStatus: string | undefined; start: AttemptStart }> {
    const enqueuedAt = enqueuedAtOf(job.opts);
    if (enqueuedAt !== undefined && (job.attemptsStarted ?? 0) <= 1 && (job.stalledCounter ?? 0) === 0) {
      const start = { queuedMs: Math.max(0, this.clock.nowMs() - enqueuedAt), enqueuedAt, alone: false };
      this.starts.set(spec.leaseId, start);
      return { overLimit: false, runStatus: this.cancelledRuns.heard(spec) ? 'cancelled' : undefined, start };
    }
    const { overLimit, runStatus, queuedMs, alone } = await this.ledger.noteStart(spec.leaseId, spec.runId, job.stalledCounter ?? 0);
    const start = { queuedMs, alone };
    this.starts.set(spec.leaseId, start);
    return { overLimit, runStatus, start };
  }

  private async settle(job: Job, token: string | undefined, spec: RolloutSpec, startedAt: number, runMs: number, outcome: AttemptOutcome): Promise<Result> {
    switch (outcome.type) {
      case 'done': {
        const { done } = outcome;
        if (done.kind === 'infrastructure' && done.error) {
          // A transient of the plane or of a dependency (InfrastructureError, connection refused,
          // HTTP 5xx…): another attempt, later, may well succeed. Same budget as crashes.
          return this.redispatch(job, token, spec, startedAt, { reason: 'Transient', exitCode: null, signal: null, stderrTail: `${done.error.type}: ${done.error.message}` }, { backoff: true });
        }
        return this.finish(job, spec, startedAt, { kind: done.kind, output: done.output, reward: done.reward, rewardDetails: done.rewardDetails, error: done.error }, runMs, outcome.costs.length > 0);
      }
      case 'overran': {
        // A deterministic function of (artifact, task, reward): it would overrun on any worker,
        // so it is the rollout's own time limit (model), on this attempt, never a re-dispatch.
        const { stage, limit, limitMs } = outcome.overrun;
        const limitText = limit === 'rewardMs' ? `timeouts.rewardMs = ${limitMs} ms` : `timeouts.runMs = ${limitMs} ms${stage === 'reward' ? ' (run and reward share it)' : ''}`;
        return this.finish(job, spec, startedAt, {
          kind: 'model',
          error: {
            type: stage === 'reward' ? 'RewardTimeout' : 'RunTimeout',
            message: `${stage === 'reward' ? `reward ${spec.reward.$ref}` : 'run'} did not finish within ${limitText}; its event loop did not answer, so the worker killed the rollout's process tree`,
          },
        }, runMs, outcome.costs.length > 0);
      }
      case 'crashed':
        if (outcome.blame !== 'self') return requeue(this.handBackDeps, job, token, spec, outcome);
        return this.redispatch(job, token, spec, startedAt, { reason: 'ChildCrashed', exitCode: outcome.exitCode, signal: outcome.signal, stderrTail: tail(outcome.stderrTail) });
      case 'hung':
        return this.redispatch(job, token, spec, startedAt, { reason: 'Hang', exitCode: null, signal: 'SIGKILL', stderrTail: `no answer within timeouts.hangMs = ${outcome.hangMs} ms; process tree killed\n${tail(outcome.stderrTail, 1500)}` });
      case 'aborted':
        if (outcome.reason === 'cancelled') {
          // The child did not answer the cancel within killGraceMs (its event loop blocked, or a
          // loaded machine slowed its clean-up) and its tree was killed. The run is cancelled all
          // the same: handing the lease back would run it again from the start, and a run
          // cancelled by its message alone (no `cancelled` status in its record) would then run
          // to its end.
          return this.finish(job, spec, startedAt, {
            kind: 'caller',
            error: { type: 'Cancelled', message: `the run was cancelled while this rollout was running; it did not stop within killGraceMs = ${this.options.killGraceMs} ms, so its process tree was killed` },
          }, runMs, outcome.costs.length > 0);
        }
        return handBack(this.handBackDeps, job, token, spec, outcome.reason);
    }
  }

  /**
   * Re-queues the same lease id after a failure of the plane, or ends it past the limit. With
   * `backoff` the job waits in BullMQ's delayed set first (token-fenced `moveToDelayed`):
   * `transientBackoffMs × 2^n`, with equal jitter (half fixed, half random), capped at 30 s.
   */
  private async redispatch(job: Job, token: string | undefined, spec: RolloutSpec, startedAt: number, rawExit: ExitInfo, how: { backoff?: boolean } = {}): Promise<Result> {
    // A child's stderr tail may quote a secret; it is stored in Redis and shown by `status`.
    const exit: ExitInfo = { ...rawExit, stderrTail: redactSecrets(rawExit.stderrTail, secretsOf(spec)) };
    const { redispatched } = await this.ledger.read(spec.leaseId);
    if (redispatched >= this.options.maxRedispatches) return this.quarantine(job, spec, startedAt, exit);
    const delayMs = how.backoff ? backoffMs(this.options.transientBackoffMs, redispatched) : 0;
    try {
      // Due by the Redis clock, which every worker shares (BR-55), not by this host's.
      if (delayMs > 0) await moveToDelayedOnRedisClock(job, token, this.clock.nowMs(), delayMs);
      else await job.moveToWait(token);
    } catch (err) {
      if (!isLostOwnership(err)) throw err;
      await this.ledger.countDuplicate(spec.runId);
      throw new WaitingError();
    }
    await this.ledger.noteRedispatch(spec.leaseId, spec.runId, exit);
    this.events.onRedispatch(exit.reason);
    this.logger.warn({ runId: spec.runId, leaseId: spec.leaseId, ...exit, attempt: redispatched + 1, ...(delayMs > 0 ? { delayMs } : {}) }, 'lease re-dispatched');
    throw delayMs > 0 ? new DelayedError() : new WaitingError();
  }

  private async quarantine(job: Job, spec: RolloutSpec, startedAt: number, exit: ExitInfo | null): Promise<Result> {
    const raw = exit ?? { reason: 'Unknown', exitCode: null, signal: null, stderrTail: '' };
    const last: ExitInfo = { ...raw, stderrTail: redactSecrets(raw.stderrTail, secretsOf(spec)) };
    await this.ledger.quarantine(spec.runId, spec.leaseId, last);
    return this.finish(job, spec, startedAt, { kind: 'infrastructure', error: quarantineError(spec.leaseId, this.options.maxRedispatches, last) });
  }

  /** The `caller` Result of a job refused before it was parsed as a spec (malformed, oversized). */
  private async refused(job: Job, error: ErrorInfo, logText: string, logFields: Record<string, unknown> = {}): Promise<Result> {
    // The one clock of every Result's timings (Redis'), not this host's.
    const result = refusedJobResult(job, error, this.options.name, this.clock.nowMs());
    const runId = result.runId;
    this.logger.warn({ leaseId: job.id, ...logFields }, logText);
    this.finishing.set(String(job.id), runId);
    this.events.onResult('caller', null);
    return result;
  }

  private async finish(
    job: Job,
    spec: RolloutSpec,
    startedAt: number,
    outcome: { kind: ResultKind; output?: unknown; reward?: number | null; rewardDetails?: unknown; error?: ErrorInfo | null },
    runMs: number | null = null,
    costsRecorded = true,
  ): Promise<Result> {
    // The one place every Result passes before Redis: secret values named in sandbox.env are
    // replaced by `[secret NAME]` in the whole output, the error and the receipts, on every kind.
    const secrets = secretsOf(spec);
    const error = outcome.error ? { type: redactSecrets(outcome.error.type, secrets), message: redactSecrets(outcome.error.message, secrets) } : null;
    const output = redactSecretsDeep(outcome.output ?? null, secrets);
    const start = this.starts.get(spec.leaseId);
    const { redispatched, costs, nowMs, verdict } = await this.noteFinish(spec, start, isTruncatedOutput(output), costsRecorded);
    if (verdict) {
      // The coordinator already ended this lease (NoWorker / DeadlineExceeded): it delivers its
      // own Result, never this one.
      this.logger.warn({ runId: spec.runId, leaseId: spec.leaseId }, 'late answer dropped: the coordinator ended this lease past its deadline');
    }
    const result: Result = {
      leaseId: spec.leaseId,
      runId: spec.runId,
      taskId: taskIdOf(spec),
      // kind, output, reward and error as the Result union has them (a reward only on ok).
      ...resultEnding(outcome.kind, output, outcome.reward ?? null, error),
      attempts: job.attemptsStarted || 1,
      redispatched,
      worker: this.options.name,
      queuedMs: start?.queuedMs ?? null,
      runMs,
      finishedAt: new Date(nowMs).toISOString(),
      cost: redactSecretsDeep(costs, secrets) as CostReceipt[],
      // What the child did (taskForRun): the gold keys were kept from the run unless the spec opted in.
      goldVisibleToRun: spec.goldVisibleToRun === true,
    };
    // The caller's tag, untouched, unless a job written by another client put a secret value in it.
    if (spec.meta !== undefined) result.meta = redactSecretsDeep(spec.meta, secrets);
    // A judge may quote what it read (a secret the run printed): redacted like the output.
    if (outcome.kind === 'ok' && outcome.rewardDetails !== undefined) result.rewardDetails = redactSecretsDeep(outcome.rewardDetails, secrets);
    this.finishing.set(spec.leaseId, spec.runId);
    this.events.onResult(result.kind, runMs);
    // Per rollout, so debug for the expected kinds: at thousands of rollouts a second an info line
    // each would cost a write per rollout; the Result and the metrics carry the same facts.
    const level = result.kind === 'ok' || result.kind === 'model' ? 'debug' : 'info';
    this.logger[level]({ runId: spec.runId, leaseId: spec.leaseId, kind: result.kind, reward: result.reward, runMs }, 'rollout finished');
    return result;
  }

  /**
   * What the Result needs from the lease's record. A first attempt that started without the
   * ledger (see {@link noteStart}) and recorded no receipt knows it all: no re-dispatch, no
   * receipts, the time from the extrapolated Redis clock; unless its output is truncated (the run
   * counts that) or it ends near a coordinator deadline, where the coordinator may have ended the
   * lease already (then this answer is a late duplicate, counted by the ledger's finish script).
   */
  private async noteFinish(spec: RolloutSpec, start: AttemptStart | undefined, truncated: boolean, costsRecorded: boolean): Promise<{ redispatched: number; costs: CostReceipt[]; nowMs: number; verdict: boolean }> {
    const nowMs = this.clock.nowMs();
    if (start?.enqueuedAt !== undefined && !truncated && !costsRecorded && !nearDeadline(spec, nowMs - start.enqueuedAt)) {
      return { redispatched: 0, costs: [], nowMs, verdict: false };
    }
    // One round trip: receipts, clock, the coordinator's verdict (a late duplicate is counted in
    // the same call) and the truncated-output counter.
    return this.ledger.noteFinish(spec.leaseId, spec.runId, truncated);
  }
}
