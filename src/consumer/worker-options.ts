import os from 'node:os';
import { z } from 'zod';
import { DEFAULT_PREFIX, DEFAULT_QUEUE } from '../lease/index.js';
import { DEFAULT_REDIS_URL } from '../platform/redis-connection.js';
import type { Logger } from '../platform/logger.js';
import { Allowlist, DEFAULT_ALLOWLIST } from '../ref/index.js';
import { CONTAINMENT_MODES, type ContainmentMode } from '../sandbox/index.js';

/**
 * Options of a rollout worker. Every option has a default; `compileWorkerOptions` turns
 * user input into a frozen {@link CompiledWorkerOptions} once, so code below never
 * re-checks or re-defaults.
 */
export const WorkerOptionsSchema = z
  .object({
    /** Redis URL (`redis://[user:pass@]host:port[/db]`, `rediss://…`). Default env `REDIS_URL`, else redis://127.0.0.1:6379. */
    redisUrl: z.string().min(1).optional(),
    /** Queue to consume. Default `rollouts`. */
    queue: z.string().default(DEFAULT_QUEUE),
    /** BullMQ key prefix. Default env `ROLLOUT_QUEUE_PREFIX`, else `rq`. */
    prefix: z.string().optional(),
    /** Rollouts run at once, one child process each. Default 2, bounds 1–256. */
    concurrency: z.number().int().min(1).max(256).default(2),
    /**
     * Module patterns added to the Ref allowlist (`rollout-queue`, `rollout-queue/*` are
     * always allowed). Widening lets whoever can write to the queue run that code here; it
     * is logged at start. Default none.
     */
    allow: z.array(z.string().min(1)).default([]),
    /** Worker name in Results, logs and BullMQ (`processedBy`). Default `<hostname>-<pid>`. */
    name: z.string().min(1).max(128).optional(),
    /**
     * BullMQ lock TTL in ms (BullMQ `lockDuration`, its default 30 000). A dead worker's
     * leases come back after this plus up to two `stalledIntervalMs`. Default 5 000 (renewed
     * every 2 500): safe because rollouts run in children, never on the event loop that renews
     * locks; with the default stalled interval a dead worker's lease runs again within ≤ 10 s
     * (issue 8; `npm run bench:recovery`).
     */
    lockDurationMs: z.number().int().min(1000).max(600_000).default(5_000),
    /** How often BullMQ's stalled check runs, ms (BullMQ `stalledInterval`, its default 30 000). Default 2 000. */
    stalledIntervalMs: z.number().int().min(500).max(600_000).default(2_000),
    /**
     * Re-dispatches a lease may have (stalls, child crashes, hangs, start failures, missing
     * secrets, any mix); the next failure ends it as `infrastructure`. Default 2. Also
     * BullMQ's `maxStalledCount`, so a lease whose workers keep dying fails there too.
     */
    maxRedispatches: z.number().int().min(0).max(100).default(2),
    /** On close, how long active rollouts may run before being handed back, ms. Default 30 000. */
    shutdownGraceMs: z.number().int().min(0).max(3_600_000).default(30_000),
    /**
     * Base of the back-off before a transient failure (an `InfrastructureError`, connection
     * refused/reset, DNS failure, HTTP 408/429/5xx) is re-dispatched: the n-th waits
     * `transientBackoffMs × 2^n` with equal jitter, capped at 30 s, in BullMQ's delayed set.
     * Default 1 000; 0 re-dispatches at once.
     */
    transientBackoffMs: z.number().int().min(0).max(60_000).default(1_000),
    /**
     * How long past `timeouts.runMs` (or `rewardMs`) a child may take to report the overrun
     * itself before the worker kills its process tree and reports `RunTimeout` /
     * `RewardTimeout`, ms. Default 250.
     */
    deadlineGraceMs: z.number().int().min(0).max(60_000).default(250),
    /** After asking a child to abort, how long before its tree is SIGKILLed, ms. Default 2 000. */
    killGraceMs: z.number().int().min(0).max(60_000).default(2_000),
    /**
     * Retire a child after this many rollouts. Default `Infinity` (never by count): children
     * are recycled on memory (`maxChildRssMb`) or when a rollout asks; re-forking costs ~100 ms
     * CPU per child. Set a count only for code that leaks outside the heap.
     */
    maxRolloutsPerChild: z.union([z.number().int().min(1), z.literal(Infinity)]).default(Infinity),
    /** Retire a child whose RSS after a rollout exceeds this, MiB. Default 2048. */
    maxChildRssMb: z.number().int().min(16).default(2048),
    /** How long a new child may take to report ready, ms. Default 10 000. */
    childStartTimeoutMs: z.number().int().min(100).default(10_000),
    /** Extra node flags for children (e.g. `--enable-source-maps`). Default none. */
    childExecArgv: z.array(z.string()).default([]),
    /** Port of the Prometheus `/metrics` and `/healthz` endpoint; unset = no endpoint. */
    metricsPort: z.number().int().min(0).max(65_535).optional(),
    /** Host the metrics endpoint binds. Default 127.0.0.1. */
    metricsHost: z.string().default('127.0.0.1'),
    /**
     * Start even though Redis' `maxmemory-policy` may evict keys (anything but `noeviction`);
     * a warning is logged instead. Default false: `create` throws `EvictionPolicyError`.
     */
    allowEviction: z.boolean().default(false),
    /** `/healthz` turns 503 when work was due for this long with no rollout started here, ms. Default 60 000. */
    livenessMs: z.number().int().min(1000).default(60_000),
    /**
     * How rollout attempts are contained (src/sandbox): `auto` takes the strongest level the
     * host allows (PID namespace + cgroup, namespace, cgroup, process group); `strict` refuses to
     * start without a PID namespace and a cgroup memory limit; `process-group` forces the
     * fallback. Default env `ROLLOUT_QUEUE_CONTAINMENT`, else `auto`.
     */
    containment: z.enum(CONTAINMENT_MODES as [ContainmentMode, ...ContainmentMode[]]).optional(),
  })
  .strict();

/** User input for a worker; see {@link WorkerOptionsSchema} for every field. */
export type WorkerOptions = z.input<typeof WorkerOptionsSchema> & { readonly logger?: Logger };

/** Fully defaulted, frozen worker options. */
export type CompiledWorkerOptions = Readonly<
  Omit<z.output<typeof WorkerOptionsSchema>, 'redisUrl' | 'prefix' | 'name' | 'containment'> & {
    redisUrl: string;
    containment: ContainmentMode;
    prefix: string;
    name: string;
    /** The effective allowlist: built-ins plus `allow`. */
    allowlist: readonly string[];
  }
>;

/**
 * Validates and defaults worker options.
 * @throws Error naming the option, what was wrong and the allowed range.
 */
export function compileWorkerOptions(input: WorkerOptions): CompiledWorkerOptions {
  const { logger: _logger, ...rest } = input;
  const parsed = WorkerOptionsSchema.safeParse(rest);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`worker option ${issue?.path.join('.') || '(options)'}: ${issue?.message ?? 'invalid'}`);
  }
  const options = parsed.data;
  const containment = options.containment ?? process.env.ROLLOUT_QUEUE_CONTAINMENT ?? 'auto';
  if (!CONTAINMENT_MODES.includes(containment as ContainmentMode)) {
    throw new Error(`worker option containment: "${containment}" (from env ROLLOUT_QUEUE_CONTAINMENT) is not one of ${CONTAINMENT_MODES.join(', ')}`);
  }
  const allowlist = [...DEFAULT_ALLOWLIST, ...options.allow.filter((pattern) => !DEFAULT_ALLOWLIST.includes(pattern))];
  // Compiled once here so a malformed --allow pattern stops the worker at start (AllowlistError).
  Allowlist.compile(allowlist);
  return Object.freeze({
    ...options,
    redisUrl: options.redisUrl ?? process.env.REDIS_URL ?? DEFAULT_REDIS_URL,
    prefix: options.prefix ?? process.env.ROLLOUT_QUEUE_PREFIX ?? DEFAULT_PREFIX,
    name: options.name ?? `${os.hostname()}-${process.pid}`,
    containment: containment as ContainmentMode,
    allowlist: Object.freeze(allowlist),
  });
}
