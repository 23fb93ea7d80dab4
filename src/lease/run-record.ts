import type { Redis } from 'ioredis';
import type { ResultKind } from '../spec/index.js';
import type { QueueKeys } from './keys.js';

/** Lifecycle of a run: `running` until every lease is delivered, or stopped early. */
export type RunStatus = 'running' | 'completed' | 'stopped' | 'cancelled';

/** Counter fields of a run, kept in Redis so they survive every process (HINCRBY on `keys.run`). */
export type RunCounter = 'redispatched' | 'duplicatesDropped' | 'alreadyEnqueued';

/** Fields of the run record HASH (`keys.run(runId)`). One source for producer, consumer and CLI. */
export const RUN_FIELDS = {
  specCount: 'specCount',
  enqueued: 'enqueued',
  status: 'status',
  stopReason: 'stopReason',
  createdAt: 'createdAt',
  runAttemptId: 'runAttemptId',
  /** What the run's drafts were made from, as the caller fingerprinted it (`MapRolloutsOptions.sourceFingerprint`); set once. */
  sourceFingerprint: 'sourceFingerprint',
  /** What the run's latest coordinator said of itself (`MapRolloutsOptions.coordinatorNote`), written once it holds the run. */
  coordinatorNote: 'coordinatorNote',
  redispatched: 'redispatched',
  duplicatesDropped: 'duplicatesDropped',
  alreadyEnqueued: 'alreadyEnqueued',
  /** When every Result was delivered, by the Redis clock (ms since the epoch); set with the retention. */
  endedAt: 'endedAt',
  /** Retention of the delivered run, ms: its keys expire this long after `endedAt`. */
  retainMs: 'retainMs',
  /** Results whose output a runner truncated (`stdoutTruncated`/`stderrTruncated`), counted once per lease by the worker. */
  truncated: 'truncated',
  /**
   * When a coordinator made the record again after Redis lost it mid-run (restarted without
   * persistence, or flushed), ISO 8601: the counts cover only what happened since.
   */
  restoredAt: 'restoredAt',
  /** `kind:<kind>`: delivered Results of that kind (counted once, at first delivery). */
  kind: (kind: ResultKind) => `kind:${kind}`,
} as const;

/** A run as `status` shows it. Counts are integers; `specCount` is null while unknown (streamed specs). */
export interface RunRecord {
  readonly runId: string;
  readonly status: RunStatus;
  readonly stopReason: string | null;
  readonly createdAt: string | null;
  readonly runAttemptId: string | null;
  readonly specCount: number | null;
  /** The fingerprint the run was created with (`MapRolloutsOptions.sourceFingerprint`), or null. */
  readonly sourceFingerprint: string | null;
  /** The note of the run's latest coordinator (`MapRolloutsOptions.coordinatorNote`), or null. */
  readonly coordinatorNote: string | null;
  readonly enqueued: number;
  readonly delivered: number;
  readonly redispatched: number;
  readonly duplicatesDropped: number;
  readonly alreadyEnqueued: number;
  /** Results computed on truncated output (see `RUN_FIELDS.truncated`). */
  readonly truncated: number;
  readonly kinds: Readonly<Record<ResultKind, number>>;
  /** When every Result was delivered (Redis clock, ISO 8601), or null while it is not. */
  readonly endedAt: string | null;
  /** Retention of the delivered run, ms (its keys expire `retainMs` after `endedAt`), or null. */
  readonly retainMs: number | null;
  /** When the record was made again after Redis lost it mid-run (see `RUN_FIELDS.restoredAt`), or null. */
  readonly restoredAt: string | null;
  /** Leases ended by the re-dispatch limit: leaseId → {reason, exitCode, signal, stderrTail}. */
  readonly quarantined: Readonly<Record<string, unknown>>;
}

const int = (value: string | undefined): number => (value ? Number.parseInt(value, 10) || 0 : 0);

/**
 * Reads a run record, or undefined when no such run exists on this queue. A pipeline, not MULTI:
 * at maxmemory Redis refuses every command queued in a MULTI, reads too (Redis `processCommand`,
 * `reject_cmd_on_oom` for a client in MULTI), and `status` must answer on a full Redis.
 */
export async function readRunRecord(redis: Redis, keys: QueueKeys, runId: string): Promise<RunRecord | undefined> {
  const [[, hash], [, delivered], [, quarantined]] = (await redis
    .pipeline()
    .hgetall(keys.run(runId))
    .scard(keys.runDelivered(runId))
    .hgetall(keys.runQuarantined(runId))
    .exec()) as [[unknown, Record<string, string>], [unknown, number], [unknown, Record<string, string>]];
  // A run's record is made with its status and runAttemptId together (the opening script,
  // ensureRun). A hash without them is no run: what a coordinator's acknowledgement counted into
  // a record that Redis lost (restarted without persistence) mid-run. Shown as a running run,
  // it got resume hints that `resume` and `cancel` (RunStore.readHead, same rule) refused.
  if (!hash || (hash[RUN_FIELDS.status] === undefined && hash[RUN_FIELDS.runAttemptId] === undefined)) return undefined;
  const parsedQuarantine: Record<string, unknown> = {};
  for (const [leaseId, json] of Object.entries(quarantined ?? {})) {
    try {
      parsedQuarantine[leaseId] = JSON.parse(json) as unknown;
    } catch {
      parsedQuarantine[leaseId] = json;
    }
  }
  return {
    runId,
    status: (hash[RUN_FIELDS.status] as RunStatus | undefined) ?? 'running',
    stopReason: hash[RUN_FIELDS.stopReason] ?? null,
    createdAt: hash[RUN_FIELDS.createdAt] ?? null,
    runAttemptId: hash[RUN_FIELDS.runAttemptId] ?? null,
    specCount: hash[RUN_FIELDS.specCount] ? int(hash[RUN_FIELDS.specCount]) : null,
    sourceFingerprint: hash[RUN_FIELDS.sourceFingerprint] ?? null,
    coordinatorNote: hash[RUN_FIELDS.coordinatorNote] ?? null,
    enqueued: int(hash[RUN_FIELDS.enqueued]),
    delivered: delivered ?? 0,
    redispatched: int(hash[RUN_FIELDS.redispatched]),
    duplicatesDropped: int(hash[RUN_FIELDS.duplicatesDropped]),
    alreadyEnqueued: int(hash[RUN_FIELDS.alreadyEnqueued]),
    truncated: int(hash[RUN_FIELDS.truncated]),
    kinds: {
      ok: int(hash[RUN_FIELDS.kind('ok')]),
      model: int(hash[RUN_FIELDS.kind('model')]),
      infrastructure: int(hash[RUN_FIELDS.kind('infrastructure')]),
      caller: int(hash[RUN_FIELDS.kind('caller')]),
    },
    endedAt: hash[RUN_FIELDS.endedAt] ? new Date(int(hash[RUN_FIELDS.endedAt])).toISOString() : null,
    retainMs: hash[RUN_FIELDS.retainMs] !== undefined ? int(hash[RUN_FIELDS.retainMs]) : null,
    restoredAt: hash[RUN_FIELDS.restoredAt] ?? null,
    quarantined: parsedQuarantine,
  };
}

/**
 * Lua: true when the run record HASH at `key` (a Lua expression, e.g. `KEYS[2]`) is a run's
 * record, by the rule of {@link readRunRecord}: it has a status or a runAttemptId. Scripts that
 * count into a record check it first, so a record Redis lost (restarted without persistence) is
 * not re-made as a counters-only hash that no retention ever expires.
 */
export function runHasRecordLua(key: string): string {
  return `(redis.call('HEXISTS', ${key}, '${RUN_FIELDS.status}') == 1 or redis.call('HEXISTS', ${key}, '${RUN_FIELDS.runAttemptId}') == 1)`;
}

// KEYS: run. ARGV: counter field, by. EVAL, not EVALSHA: re-submissions and late duplicates are rare.
const INCREMENT_RECORDED = `if ${runHasRecordLua('KEYS[1]')} then return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2]) end return 0`;

/** Adds `by` to one counter of a run; nothing when the run has no record (see {@link runHasRecordLua}). */
export async function incrementRunCounter(redis: Redis, keys: QueueKeys, runId: string, counter: RunCounter, by = 1): Promise<void> {
  await redis.eval(INCREMENT_RECORDED, 1, keys.run(runId), RUN_FIELDS[counter], by);
}
