import { ErrorCode, WaitingError, type Job } from 'bullmq';
import type { Logger } from '../platform/logger.js';
import { parseRolloutSpec, type ErrorInfo, type Result, type ResultKind, type RolloutSpec } from '../spec/index.js';
import type { ChildPool } from './child-pool.js';
import { ChildStartError, type AttemptOutcome } from './rollout-child.js';
import type { ExitInfo, LeaseLedger } from './lease-ledger.js';
import type { CompiledWorkerOptions } from './worker-options.js';

/** Abort reasons the worker gives a running rollout. */
export type AbortReason = 'cancelled' | 'lock-lost' | 'shutdown';

/** BullMQ codes meaning "this attempt no longer owns the job" (BullMQ `src/enums/error-code.ts`). */
export const LOST_OWNERSHIP_CODES: ReadonlySet<number> = new Set([
  ErrorCode.JobNotExist,
  ErrorCode.JobLockNotExist,
  ErrorCode.JobNotInState,
  ErrorCode.JobLockMismatch,
]);

/** True when `err` is BullMQ refusing a finish because this attempt lost the job. */
export function isLostOwnership(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' && LOST_OWNERSHIP_CODES.has(code);
}

/** Hooks the processor reports through (metrics, duplicate accounting). */
export interface ProcessorEvents {
  onResult(kind: ResultKind, runMs: number | null): void;
  onRedispatch(cause: string): void;
  onStart(): void;
}

interface ActiveRollout {
  readonly runId: string;
  readonly controller: AbortController;
}

const tail = (text: string, bytes = 2000): string => (text.length > bytes ? text.slice(-bytes) : text);

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

  constructor(
    private readonly options: CompiledWorkerOptions,
    private readonly pool: ChildPool,
    private readonly ledger: LeaseLedger,
    private readonly logger: Logger,
    private readonly events: ProcessorEvents,
  ) {}

  /** Aborts one rollout (lock lost), every rollout of a run (cancelled) or all (shutdown). */
  abort(filter: { leaseId?: string; runId?: string }, reason: AbortReason): number {
    let count = 0;
    for (const [leaseId, rollout] of this.active) {
      if ((filter.leaseId && filter.leaseId !== leaseId) || (filter.runId && filter.runId !== rollout.runId)) continue;
      if (!rollout.controller.signal.aborted) {
        rollout.controller.abort(reason);
        count++;
      }
    }
    return count;
  }

  /** The BullMQ processor function: `(job, token) → Result`. */
  readonly process = async (job: Job, token?: string): Promise<Result> => {
    const startedAt = Date.now();
    const parsed = parseRolloutSpec(job.data);
    if (!parsed.success) return this.malformed(job, parsed.error.issues);
    const spec = parsed.data;
    if (spec.leaseId !== job.id) {
      return this.finish(job, spec, startedAt, { kind: 'caller', error: { type: 'InvalidSpec', message: `job id "${job.id}" differs from spec.leaseId "${spec.leaseId}"; add the job with jobId = leaseId` } });
    }
    const log = this.logger.child({ runId: spec.runId, leaseId: spec.leaseId });
    const { redispatched, runStatus } = await this.ledger.noteStart(spec.leaseId, spec.runId, job.stalledCounter ?? 0);
    if (runStatus === 'cancelled') {
      return this.finish(job, spec, startedAt, { kind: 'caller', error: { type: 'Cancelled', message: 'the run was cancelled before this rollout started' } });
    }
    if (redispatched > this.options.maxRedispatches) {
      const { lastExit } = await this.ledger.read(spec.leaseId);
      return this.quarantine(job, spec, startedAt, lastExit);
    }
    const missing = spec.sandbox.env.filter((name) => process.env[name] === undefined);
    if (missing.length > 0) {
      return this.redispatch(job, token, spec, startedAt, {
        reason: 'MissingSecret',
        exitCode: null,
        signal: null,
        stderrTail: `worker ${this.options.name} has no environment variable ${missing.join(', ')} (named in sandbox.env); set it on the worker`,
      });
    }
    const secrets = Object.fromEntries(spec.sandbox.env.map((name) => [name, process.env[name] as string]));
    const controller = new AbortController();
    this.active.set(spec.leaseId, { runId: spec.runId, controller });
    this.events.onStart();
    try {
      let child;
      try {
        child = await this.pool.acquire(spec.sandbox.memoryMb);
      } catch (err) {
        if (!(err instanceof ChildStartError)) throw err;
        log.error({ exitCode: err.exitCode, signal: err.signal, stderrTail: tail(err.stderrTail, 500) }, 'rollout child failed to start');
        return await this.redispatch(job, token, spec, startedAt, { reason: 'ChildStartFailed', exitCode: err.exitCode, signal: err.signal, stderrTail: tail(err.stderrTail) });
      }
      const runStarted = Date.now();
      const outcome = await child.run(
        { type: 'run', spec, taskId: taskIdOf(spec), attempt: job.attemptsStarted || 1, secrets },
        { hangMs: spec.timeouts.hangMs, killGraceMs: this.options.killGraceMs, signal: controller.signal },
      );
      await this.pool.release(child, { retire: outcome.type !== 'done' || outcome.done.recycle, crashed: outcome.type === 'crashed' });
      await this.ledger.recordCosts(spec.leaseId, outcome.costs);
      return await this.settle(job, token, spec, startedAt, Date.now() - runStarted, outcome);
    } finally {
      this.active.delete(spec.leaseId);
    }
  };

  private async settle(job: Job, token: string | undefined, spec: RolloutSpec, startedAt: number, runMs: number, outcome: AttemptOutcome): Promise<Result> {
    switch (outcome.type) {
      case 'done':
        return this.finish(job, spec, startedAt, { kind: outcome.done.kind, output: outcome.done.output, reward: outcome.done.reward, error: outcome.done.error }, runMs);
      case 'crashed':
        return this.redispatch(job, token, spec, startedAt, { reason: 'ChildCrashed', exitCode: outcome.exitCode, signal: outcome.signal, stderrTail: tail(outcome.stderrTail) });
      case 'hung':
        return this.redispatch(job, token, spec, startedAt, { reason: 'Hang', exitCode: null, signal: 'SIGKILL', stderrTail: `no answer within timeouts.hangMs = ${outcome.hangMs} ms; process tree killed\n${tail(outcome.stderrTail, 1500)}` });
      case 'aborted':
        return this.handBack(job, token, spec, outcome.reason);
    }
  }

  /** Ends an attempt the worker chose to stop: planned hand-back (shutdown) or lost lock. */
  private async handBack(job: Job, token: string | undefined, spec: RolloutSpec, reason: string): Promise<never> {
    try {
      await job.moveToWait(token);
      if (reason === 'lock-lost') {
        // Our lock token was still in Redis, so nobody else has the lease: a real re-dispatch.
        await this.ledger.noteRedispatch(spec.leaseId, spec.runId, { reason: 'LockLost', exitCode: null, signal: null, stderrTail: 'lock renewal failed; attempt aborted' });
        this.events.onRedispatch('lock-lost');
      }
      this.logger.info({ runId: spec.runId, leaseId: spec.leaseId, reason }, 'rollout handed back to the queue');
    } catch (err) {
      if (!isLostOwnership(err)) throw err;
      // Another attempt owns the lease now; this one's answer is a late duplicate.
      await this.ledger.countDuplicate(spec.runId);
      this.logger.warn({ runId: spec.runId, leaseId: spec.leaseId, reason }, 'late attempt dropped: the lease belongs to another attempt');
    }
    throw new WaitingError();
  }

  /** Re-queues the same lease id after a failure of the plane, or ends it past the limit. */
  private async redispatch(job: Job, token: string | undefined, spec: RolloutSpec, startedAt: number, exit: ExitInfo): Promise<Result> {
    const { redispatched } = await this.ledger.read(spec.leaseId);
    if (redispatched >= this.options.maxRedispatches) return this.quarantine(job, spec, startedAt, exit);
    try {
      await job.moveToWait(token);
    } catch (err) {
      if (!isLostOwnership(err)) throw err;
      await this.ledger.countDuplicate(spec.runId);
      throw new WaitingError();
    }
    await this.ledger.noteRedispatch(spec.leaseId, spec.runId, exit);
    this.events.onRedispatch(exit.reason);
    this.logger.warn({ runId: spec.runId, leaseId: spec.leaseId, ...exit, attempt: redispatched + 1 }, 'lease re-dispatched');
    throw new WaitingError();
  }

  private async quarantine(job: Job, spec: RolloutSpec, startedAt: number, exit: ExitInfo | null): Promise<Result> {
    const last = exit ?? { reason: 'Unknown', exitCode: null, signal: null, stderrTail: '' };
    await this.ledger.quarantine(spec.runId, spec.leaseId, last);
    const why = last.reason === 'MissingSecret' ? last.stderrTail : `the worker died repeatedly while running it (last: ${last.reason}, exit code ${last.exitCode}, signal ${last.signal})`;
    return this.finish(job, spec, startedAt, {
      kind: 'infrastructure',
      error: { type: 'RedispatchLimit', message: `lease ${spec.leaseId} ended after ${this.options.maxRedispatches} re-dispatches: ${why}${last.stderrTail && last.reason !== 'MissingSecret' ? `\nstderr tail:\n${tail(last.stderrTail, 1000)}` : ''}` },
    });
  }

  /** A job whose data is not a valid RolloutSpec (another client, another language): a caller Result. */
  private async malformed(job: Job, issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): Promise<Result> {
    const data = (job.data ?? {}) as Record<string, unknown>;
    const detail = issues.slice(0, 5).map((issue) => `${issue.path.map(String).join('.') || '(data)'}: ${issue.message}`).join('; ');
    const runId = typeof data.runId === 'string' ? data.runId : '';
    const task = data.task as Record<string, unknown> | undefined;
    const result: Result = {
      leaseId: String(job.id),
      runId,
      taskId: typeof task?.id === 'string' || typeof task?.id === 'number' ? String(task.id) : String(job.id),
      kind: 'caller',
      output: null,
      reward: null,
      error: { type: 'InvalidSpec', message: `job ${job.id} is not a valid RolloutSpec v1: ${detail}. Build jobs from schema/rollout-spec.json` },
      attempts: job.attemptsStarted || 1,
      redispatched: 0,
      worker: this.options.name,
      queuedMs: job.processedOn ? Math.max(0, job.processedOn - job.timestamp) : null,
      runMs: null,
      finishedAt: new Date().toISOString(),
      cost: [],
    };
    this.logger.warn({ leaseId: job.id, issues: detail }, 'malformed job reported as caller Result');
    this.finishing.set(String(job.id), runId);
    this.events.onResult('caller', null);
    return result;
  }

  private async finish(
    job: Job,
    spec: RolloutSpec,
    startedAt: number,
    outcome: { kind: ResultKind; output?: unknown; reward?: number | null; error?: ErrorInfo | null },
    runMs: number | null = null,
  ): Promise<Result> {
    const { redispatched, costs } = await this.ledger.read(spec.leaseId);
    const result: Result = {
      leaseId: spec.leaseId,
      runId: spec.runId,
      taskId: taskIdOf(spec),
      kind: outcome.kind,
      output: outcome.output ?? null,
      reward: outcome.kind === 'ok' ? (outcome.reward ?? null) : null,
      error: outcome.error ?? null,
      attempts: job.attemptsStarted || 1,
      redispatched,
      worker: this.options.name,
      queuedMs: job.processedOn ? Math.max(0, job.processedOn - job.timestamp) : Math.max(0, startedAt - job.timestamp),
      runMs,
      finishedAt: new Date().toISOString(),
      cost: costs,
    };
    this.finishing.set(spec.leaseId, spec.runId);
    this.events.onResult(result.kind, runMs);
    this.logger.info({ runId: spec.runId, leaseId: spec.leaseId, kind: result.kind, reward: result.reward, runMs }, 'rollout finished');
    return result;
  }
}

/** `task.id` as a string, else the task key part of the lease id. */
function taskIdOf(spec: RolloutSpec): string {
  const id = spec.task.id;
  if (typeof id === 'string' || typeof id === 'number') return String(id);
  return spec.leaseId.slice(spec.runId.length + 1);
}
