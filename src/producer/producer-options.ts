import { tracingEnabled } from '../platform/telemetry.js';
import { z } from 'zod';
import { clusterPrefixProblem, DEFAULT_PREFIX, DEFAULT_QUEUE, queueKeys } from '../lease/index.js';
import { createLogger, type Logger } from '../platform/logger.js';
import { DEFAULT_REDIS_URL, redisTopology } from '../platform/redis-connection.js';
import { DEFAULT_RETAIN_MS } from './run-retention.js';
import { unknownOptionsText } from '../spec/closest-key.js';

/** 1 MiB in bytes: the default {@link ProducerOptions.maxSpecBytes}. */
export const ONE_MIB = 1024 * 1024;
/** The default {@link ProducerOptions.maxSpecBytes}, bytes. */
export const DEFAULT_MAX_SPEC_BYTES = ONE_MIB;
/** The upper bound of {@link ProducerOptions.maxSpecBytes} and `maxTaskBytes`, bytes (512 MiB, Redis' default `proto-max-bulk-len`). */
export const MAX_PRODUCER_BYTES = 512 * ONE_MIB;
/** 256 KiB in bytes: the default {@link ProducerOptions.maxTaskBytes}. */
export const DEFAULT_MAX_TASK_BYTES = 256 * 1024;

const isLogger = (value: unknown): value is Logger =>
  typeof value === 'object' &&
  value !== null &&
  ['info', 'warn', 'error', 'debug', 'child'].every((method) => typeof (value as Record<string, unknown>)[method] === 'function');

/** Default `ProducerOptions.maxUnacknowledged`. */
export const DEFAULT_MAX_UNACKNOWLEDGED = 100;

/**
 * Options of `RolloutQueue.create`, one zod schema. Parsing yields a fully defaulted,
 * readonly {@link CompiledProducerOptions}; code below the boundary never re-checks them.
 */
export const ProducerOptionsSchema = z
  .object({
    /**
     * Redis address, `redis://[user:password@]host:port[/db]` or `rediss://…`; Sentinel
     * `redis+sentinel://host:26379,…/<primary>[/db]`; Cluster `redis+cluster://host:port,…`
     * (needs a hash-tagged `prefix` such as `{rq}`).
     * Default: env `REDIS_URL`, else `redis://127.0.0.1:6379`. Logged redacted, never with its password.
     */
    redisUrl: z.string().min(1).optional(),
    /** BullMQ queue name the workers consume. Default `rollouts`. Letters, digits, `_`, `-`, `{}`. */
    queue: z.string().min(1).default(DEFAULT_QUEUE),
    /** BullMQ key prefix. Default: env `ROLLOUT_QUEUE_PREFIX`, else `rq`. Must match the workers'. */
    prefix: z.string().min(1).optional(),
    /**
     * Back-pressure on the way in: at most this many of one run's jobs are enqueued and not yet
     * seen finished (waiting + active) at any time. Default 500, bounds 1–1 000 000. Results are
     * never held back by it: finished results wait in Redis until the consumer takes them.
     */
    maxInFlight: z.number().int().min(1).max(1_000_000).default(500),
    /**
     * Most finished Results of one run a coordinator holds in memory for a consumer that has not
     * taken them yet. Past it, further Results stay in Redis only (they are durable there) and
     * their leases keep counting against `maxInFlight`, so a slow consumer also stops the
     * enqueuing of more drafts; they are read again once the consumer took half of those held.
     * Default 1 000, bounds 1–10 000 000.
     */
    maxHeldResults: z.number().int().min(1).max(10_000_000).default(1000),
    /**
     * Share the queue's workers between runs by weight (`MapRolloutsOptions.weight`): each job
     * gets a BullMQ priority from the queue's fair-share clock (docs/fair-share.md). False: jobs
     * go to BullMQ's plain wait list, first in first out across runs (before issue 33). Default true.
     */
    fairShare: z.boolean().default(true),
    /**
     * Most Results yielded to the consumer and not yet acknowledged in Redis (marked delivered,
     * counted). They are acknowledged together, in one fenced script call, once this many are
     * outstanding, and whenever the consumer asks for the next Result and none is ready, and when
     * the iteration ends. A coordinator killed or closed in between delivers those again when the
     * run is resumed (each is still counted once in Redis): at-least-once delivery, with at most
     * this many repeats. 1 acknowledges each Result before the next is yielded. Default 100,
     * bounds 1–10 000.
     */
    maxUnacknowledged: z.number().int().min(1).max(10_000).default(DEFAULT_MAX_UNACKNOWLEDGED),
    /**
     * Period of the reconciliation of a run's outstanding leases against BullMQ job state, in ms.
     * QueueEvents is only the fast path (its stream is trimmed and missed while nobody listens),
     * so this bounds how late a result can be. Default 2000, bounds 10–3 600 000.
     */
    reconcileMs: z.number().int().min(10).max(3_600_000).default(2000),
    /**
     * Stop a run at its first `caller` Result (bad Ref, bad spec, reward out of range): yield it,
     * remove the run's waiting jobs, enqueue nothing more, throw `RunStoppedError`. Default true.
     */
    stopOnCaller: z.boolean().default(true),
    /**
     * Largest serialized (JSON, UTF-8) spec accepted, in bytes. A bigger draft is refused as a
     * `caller` Result (type `InvalidSpec`) and never enqueued. Default 1 MiB, bounds 1 KiB–512 MiB.
     */
    maxSpecBytes: z.number().int().min(1024).max(MAX_PRODUCER_BYTES).default(DEFAULT_MAX_SPEC_BYTES),
    /**
     * Largest serialized (JSON, UTF-8) `task` accepted, in bytes; checked before the whole
     * spec. A bigger one is refused like an oversized spec. Default 256 KiB, bounds 1 KiB–512 MiB.
     */
    maxTaskBytes: z.number().int().min(1024).max(MAX_PRODUCER_BYTES).default(DEFAULT_MAX_TASK_BYTES),
    /**
     * How long `create` waits for the first connection to Redis, in ms, before it throws.
     * After that first connection the producer reconnects forever (see `RolloutQueue.create`).
     * Default 10 000, bounds 100–600 000.
     */
    connectTimeoutMs: z.number().int().min(100).max(600_000).default(10_000),
    /**
     * Listen to BullMQ QueueEvents (one extra, blocking Redis connection) for fast delivery.
     * `false` relies on reconciliation alone (results arrive within `reconcileMs`). Default true.
     */
    queueEvents: z.boolean().default(true),
    /**
     * Write BullMQ's `meta` key of the queue when opening it (BullMQ's `Queue` does unless
     * `skipMetasUpdate`), which is how `dashboard` finds queues. `false` for a producer that only
     * reads or ends runs (the CLI's `status`, `cancel`, `purge`): opening a misspelt queue name
     * must not make a queue the dashboard then lists. Default true.
     */
    writeQueueMeta: z.boolean().default(true),
    /**
     * How long a run stays in Redis once every Result is delivered, ms: then its job hashes,
     * lease hashes, stored artifact and run records expire (PEXPIRE set when the run completes;
     * docs/retention.md). `purge` removes a run at once. Default 259 200 000 (3 days), bounds
     * 0 (remove as soon as it is delivered) to 31 536 000 000 (365 days).
     */
    retainMs: z.number().int().min(0).max(365 * 24 * 3600 * 1000).default(DEFAULT_RETAIN_MS),
    /**
     * Placement strategy, called once per draft whose spec names no `placement`: returns the
     * labels (`{ region: 'eu-west' }`) a worker must have (`worker --placement KEY=VALUE`) to
     * take it, or undefined for any worker. A spec's own `placement` wins. Default none.
     */
    /**
     * Cost ceiling of a run, US dollars: once the cost receipts of its delivered Results reach it,
     * no new lease is dispatched (nothing more enqueued, waiting jobs removed), leases already
     * running finish and are delivered, then the iterator throws `RunStoppedError` saying so
     * (run status `stopped`). Counted per `mapRollouts` call. Default none.
     */
    costCeilingUsd: z.number().positive().finite().optional(),
    /**
     * OpenTelemetry spans: a span `rollout-queue.enqueue` per batch (its W3C traceparent goes into
     * each spec's `traceparent`) and BullMQ's own spans (bullmq-otel), to the global tracer
     * provider. Default on when env `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else off.
     */
    telemetry: z.boolean().optional(),
    placementFor: z.custom<PlacementFor>((value) => typeof value === 'function', 'placementFor must be a function (task) => labels | undefined').optional(),
    /** pino logger. Default: a JSON logger to stderr (level `LOG_LEVEL`, default info) with `component: "producer"` and secret redaction. */
    logger: z.custom<Logger>(isLogger, 'logger must be a pino logger (info/warn/error/debug/child)').optional(),
  })
  .strict();

/** The `placementFor` strategy: labels for a draft's `task` (string values), or undefined for no placement. */
export type PlacementFor = (task: unknown) => Readonly<Record<string, string>> | undefined;

/**
 * What a caller may pass to `RolloutQueue.create`; every field is optional. Written out (not
 * inferred from {@link ProducerOptionsSchema}) so the docs reach editors through the published
 * `.d.ts`; a compile-time check keeps the two identical.
 */
export interface ProducerOptions {
  /**
   * Redis address, `redis://[user:password@]host:port[/db]` or `rediss://…`; Sentinel
   * `redis+sentinel://host:26379,…/<primary>[/db]`; Cluster `redis+cluster://host:port,…`
   * (needs a hash-tagged `prefix` such as `{rq}`).
   * Default: env `REDIS_URL`, else `redis://127.0.0.1:6379`. Logged redacted, never with its password.
   */
  readonly redisUrl?: string;
  /** BullMQ queue name the workers consume. Default `rollouts`. Letters, digits, `_`, `-`, `{}`. */
  readonly queue?: string;
  /** BullMQ key prefix. Default: env `ROLLOUT_QUEUE_PREFIX`, else `rq`. Must match the workers'. */
  readonly prefix?: string;
  /**
   * Back-pressure on the way in: at most this many of one run's jobs are enqueued and not yet
   * seen finished (waiting + active) at any time. Default 500, bounds 1–1 000 000. Results are
   * never held back by it: finished results wait in Redis until the consumer takes them.
   */
  readonly maxInFlight?: number;
  /**
   * Most finished Results of one run a coordinator holds in memory for a consumer that has not
   * taken them yet. Past it, further Results stay in Redis only (they are durable there) and
   * their leases keep counting against `maxInFlight`, so a slow consumer also stops the
   * enqueuing of more drafts; they are read again once the consumer took half of those held.
   * Default 1 000, bounds 1–10 000 000.
   */
  readonly maxHeldResults?: number;
  /**
   * Share the queue's workers between runs by weight (`MapRolloutsOptions.weight`, docs/fair-share.md);
   * false: first in first out across runs, as before. Default true.
   */
  readonly fairShare?: boolean;
  /**
   * Most Results yielded to the consumer and not yet acknowledged in Redis (marked delivered,
   * counted). They are acknowledged together, in one fenced script call, once this many are
   * outstanding, and whenever the consumer asks for the next Result and none is ready, and when
   * the iteration ends. A coordinator killed or closed in between delivers those again when the
   * run is resumed (each is still counted once in Redis): at-least-once delivery, with at most
   * this many repeats. 1 acknowledges each Result before the next is yielded. Default 100,
   * bounds 1–10 000.
   */
  readonly maxUnacknowledged?: number;
  /**
   * Period of the reconciliation of a run's outstanding leases against BullMQ job state, in ms.
   * QueueEvents is only the fast path (its stream is trimmed and missed while nobody listens),
   * so this bounds how late a result can be. Default 2000, bounds 10–3 600 000.
   */
  readonly reconcileMs?: number;
  /**
   * Stop a run at its first `caller` Result (bad Ref, bad spec, reward out of range): yield it,
   * remove the run's waiting jobs, enqueue nothing more, throw `RunStoppedError`. Default true.
   */
  readonly stopOnCaller?: boolean;
  /**
   * Largest serialized (JSON, UTF-8) spec accepted, in bytes. A bigger draft is refused as a
   * `caller` Result (type `InvalidSpec`) and never enqueued. Default 1 MiB, bounds 1 KiB–512 MiB.
   */
  readonly maxSpecBytes?: number;
  /**
   * Largest serialized (JSON, UTF-8) `task` accepted, in bytes; checked before the whole
   * spec. A bigger one is refused like an oversized spec. Default 256 KiB, bounds 1 KiB–512 MiB.
   */
  readonly maxTaskBytes?: number;
  /**
   * How long `create` waits for the first connection to Redis, in ms, before it throws.
   * After that first connection the producer reconnects forever (see `RolloutQueue.create`).
   * Default 10 000, bounds 100–600 000.
   */
  readonly connectTimeoutMs?: number;
  /**
   * Listen to BullMQ QueueEvents (one extra, blocking Redis connection) for fast delivery.
   * `false` relies on reconciliation alone (results arrive within `reconcileMs`). Default true.
   */
  readonly queueEvents?: boolean;
  /**
   * Write BullMQ's `meta` key of the queue when opening it (BullMQ's `Queue` does unless
   * `skipMetasUpdate`), which is how `dashboard` finds queues. `false` for a producer that only
   * reads or ends runs (the CLI's `status`, `cancel`, `purge`): opening a misspelt queue name
   * must not make a queue the dashboard then lists. Default true.
   */
  readonly writeQueueMeta?: boolean;
  /**
   * How long a run stays in Redis once every Result is delivered, ms: then its job hashes,
   * lease hashes, stored artifact and run records expire (PEXPIRE set when the run completes;
   * docs/retention.md). `purge` removes a run at once. Default 259 200 000 (3 days), bounds
   * 0 (remove as soon as it is delivered) to 31 536 000 000 (365 days).
   */
  readonly retainMs?: number;
  /**
   * Placement strategy, called once per draft whose spec names no `placement`: returns the
   * labels (`{ region: 'eu-west' }`) a worker must have (`worker --placement KEY=VALUE`) to
   * take it, or undefined for any worker. A spec's own `placement` wins. Default none.
   */
  readonly placementFor?: PlacementFor;
  /**
   * Cost ceiling of a run, US dollars: once the cost receipts of its delivered Results reach it,
   * no new lease is dispatched (nothing more enqueued, waiting jobs removed), leases already
   * running finish and are delivered, then the iterator throws `RunStoppedError` saying so
   * (run status `stopped`). Counted per `mapRollouts` call. Default none.
   */
  readonly costCeilingUsd?: number;
  /**
   * OpenTelemetry spans: a span `rollout-queue.enqueue` per batch (its W3C traceparent goes into
   * each spec's `traceparent`) and BullMQ's own spans (bullmq-otel), to the global tracer
   * provider. Default on when env `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else off.
   */
  readonly telemetry?: boolean;
  /** pino logger. Default: a JSON logger to stderr (level `LOG_LEVEL`, default info) with `component: "producer"` and secret redaction. */
  readonly logger?: Logger;
}

// Fails to compile when ProducerOptions and ProducerOptionsSchema drift apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const producerOptionsMatchSchema: Same<Required<ProducerOptions>, Required<{ -readonly [K in keyof z.input<typeof ProducerOptionsSchema>]: z.input<typeof ProducerOptionsSchema>[K] }>> = true;
void producerOptionsMatchSchema;

/** Fully defaulted producer options. */
export interface CompiledProducerOptions {
  readonly redisUrl: string;
  readonly queue: string;
  readonly prefix: string;
  readonly maxInFlight: number;
  readonly maxHeldResults: number;
  readonly fairShare: boolean;
  readonly maxUnacknowledged: number;
  readonly reconcileMs: number;
  readonly stopOnCaller: boolean;
  readonly maxSpecBytes: number;
  readonly maxTaskBytes: number;
  readonly connectTimeoutMs: number;
  readonly queueEvents: boolean;
  readonly writeQueueMeta: boolean;
  readonly retainMs: number;
  readonly placementFor: PlacementFor | undefined;
  readonly costCeilingUsd: number | undefined;
  /** Tracing on (`telemetry`, else env OTEL_EXPORTER_OTLP_ENDPOINT). */
  readonly tracing: boolean;
  readonly logger: Logger;
}

/**
 * Validates and defaults producer options; env is read here and nowhere below.
 * @throws Error naming the option path, what is allowed, and the fix.
 */
export function compileProducerOptions(input: ProducerOptions = {}, env: NodeJS.ProcessEnv = process.env): CompiledProducerOptions {
  const parsed = ProducerOptionsSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.code === 'unrecognized_keys' && issue.path.length === 0) {
      throw new Error(`RolloutQueue.create: ${unknownOptionsText(issue.keys, Object.keys(ProducerOptionsSchema.shape))}`);
    }
    const path = issue?.path.map(String).join('.') || '(options)';
    throw new Error(`RolloutQueue option ${path}: ${issue?.message ?? 'invalid'}; see ProducerOptions for the allowed values`);
  }
  const value = parsed.data;
  const prefix = value.prefix ?? env.ROLLOUT_QUEUE_PREFIX ?? DEFAULT_PREFIX;
  queueKeys(prefix, value.queue); // throws a message naming prefix or queue when it would split Redis keys
  const redisUrl = value.redisUrl ?? env.REDIS_URL ?? DEFAULT_REDIS_URL;
  const clusterProblem = redisTopology(redisUrl) === 'cluster' ? clusterPrefixProblem(prefix, value.queue) : undefined;
  if (clusterProblem) throw new Error(`RolloutQueue option prefix: ${clusterProblem}`);
  return Object.freeze({
    redisUrl,
    queue: value.queue,
    prefix,
    maxInFlight: value.maxInFlight,
    maxHeldResults: value.maxHeldResults,
    fairShare: value.fairShare,
    maxUnacknowledged: value.maxUnacknowledged,
    reconcileMs: value.reconcileMs,
    stopOnCaller: value.stopOnCaller,
    maxSpecBytes: value.maxSpecBytes,
    maxTaskBytes: value.maxTaskBytes,
    connectTimeoutMs: value.connectTimeoutMs,
    queueEvents: value.queueEvents,
    writeQueueMeta: value.writeQueueMeta,
    retainMs: value.retainMs,
    placementFor: value.placementFor,
    costCeilingUsd: value.costCeilingUsd,
    tracing: value.telemetry ?? tracingEnabled(undefined, env),
    logger: value.logger ?? createLogger({ component: 'producer' }),
  });
}
