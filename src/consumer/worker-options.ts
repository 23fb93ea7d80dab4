import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { clusterPrefixProblem, DEFAULT_PREFIX, DEFAULT_QUEUE, FINGERPRINT_LABEL } from '../lease/index.js';
import { defaultChildren } from './child-count.js';
import { environmentFingerprint, fingerprintInputs } from './environment-fingerprint.js';
import { tracingEnabled } from '../platform/telemetry.js';
import { DEFAULT_REDIS_URL, redisTopology } from '../platform/redis-connection.js';
import type { Logger } from '../platform/logger.js';
import { Allowlist, DEFAULT_ALLOWLIST } from '../ref/index.js';
import { CONTAINMENT_MODES, LAUNCHER_CHOICES, type ContainmentMode, type LauncherChoice } from '../sandbox/index.js';
import { unknownOptionsText } from '../spec/closest-key.js';

/**
 * Options of a rollout worker. Every option has a default; `compileWorkerOptions` turns
 * user input into a frozen {@link CompiledWorkerOptions} once, so code below never
 * re-checks or re-defaults.
 */

/**
 * The default `maxOutputBytes`: 64 MiB, above what codeRunner keeps of an artifact's stdout and
 * stderr at its own `maxOutputBytes` up to 32 MiB each (1 MiB each by default; a codeRunner
 * configured to keep more needs the worker's limit raised too).
 */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
/**
 * The default worker-side `maxSpecBytes`: 64 MiB, well above the producer's default (1 MiB) and
 * what its stored artifacts leave in a job (a large `rendered` travels by hash), below what would
 * take a worker's heap with it.
 */
export const DEFAULT_WORKER_MAX_SPEC_BYTES = 64 * 1024 * 1024;
export const WorkerOptionsSchema = z
  .object({
    /** Redis URL (`redis://[user:pass@]host:port[/db]`, `rediss://…`, `redis+sentinel://…/<primary>`, `redis+cluster://…`; Cluster needs a hash-tagged `prefix`). Default env `REDIS_URL`, else redis://127.0.0.1:6379. */
    redisUrl: z.string().min(1).optional(),
    /** Queue to consume. Default `rollouts`. */
    queue: z.string().default(DEFAULT_QUEUE),
    /** BullMQ key prefix. Default env `ROLLOUT_QUEUE_PREFIX`, else `rq`. */
    prefix: z.string().optional(),
    /**
     * Rollout slots: rollouts run at once. Slots are not processes: the rollouts share `children`
     * child processes (a spec may ask for one of its own, `sandbox.isolation: "process"`). Default 2,
     * bounds 1–1000.
     */
    concurrency: z.number().int().min(1).max(1000).default(2),
    /**
     * Shared rollout child processes per heap limit (`sandbox.memoryMb`) that host the slots.
     * Default one per 32 slots (`concurrency` + `evalConcurrency`), at most one per core and one
     * per 256 MiB of free memory, at least 1 (`defaultChildren`). More children: more CPU for run
     * code and fewer neighbours per crash; fewer: less memory. Bounds 1–256.
     */
    children: z.number().int().min(1).max(256).optional(),
    /**
     * A shared child holding two rollouts or more whose event loop has not turned for this long is
     * killed, ms: its rollouts are handed back without counting a re-dispatch, the one whose code
     * blocked it (when the child can tell) retries in a child of its own. Default 10 000.
     */
    blockedLoopMs: z.number().int().min(500).max(3_600_000).default(10_000),
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
     * (`npm run bench:recovery`).
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
    /**
     * Retire a child whose RSS after a rollout exceeds this, MiB. Default 2048. The child reads its
     * RSS at most every 100 ms, and at once when V8's memory grew 16 MiB since (see child-rss.ts).
     */
    maxChildRssMb: z.number().int().min(16).default(2048),
    /**
     * Largest output a run function may return, bytes of its JSON text (counted as UTF-16 code
     * units, a lower bound): a larger one ends `model` / `OutputTooLarge` before the reward runs.
     * A Result is stored in Redis and held by the coordinator. Default 64 MiB.
     */
    maxOutputBytes: z.number().int().min(1024).max(512 * 1024 * 1024).default(DEFAULT_MAX_OUTPUT_BYTES),
    /**
     * Largest job this worker runs, bytes of its data's JSON text (counted as UTF-16 code units,
     * a lower bound, without serialising it): a larger job ends `caller` / `SpecTooLarge` before
     * anything runs, whoever wrote it (the producer has its own `maxSpecBytes`; a job added by
     * another client has none). Default 64 MiB (1 KiB–512 MiB).
     */
    maxSpecBytes: z.number().int().min(1024).max(512 * 1024 * 1024).default(DEFAULT_WORKER_MAX_SPEC_BYTES),
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
     * How rollout attempts are contained (src/sandbox, docs/security.md): `auto` takes the
     * strongest level the host allows and lists each open boundary (`containmentGaps`);
     * `sealed` (or `strict`) refuses to start with any gap; `namespace+cgroup`, `namespace`,
     * `cgroup` and `process-group` force that weaker level at most, on purpose (tests, trusted
     * programs that need the host; see `ContainmentMode`). Default env
     * `ROLLOUT_QUEUE_CONTAINMENT`, else `auto`.
     */
    containment: z.enum(CONTAINMENT_MODES as [ContainmentMode, ...ContainmentMode[]]).optional(),
    /**
     * Grant the host network to the programs of specs that ask for it (`sandbox.network:
     * "host"`; CLI `--allow-network`). Default false: such a spec ends `caller` /
     * `NetworkNotAllowed`, and every program has only its own loopback.
     */
    allowNetwork: z.boolean().default(false),
    /**
     * Absolute host paths (directories or files, existing) the programs of specs see read-only,
     * at the same path, besides the system (/usr, /etc) and the interpreters' installations
     * (CLI `--expose PATH`, repeatable). Default none.
     */
    exposeReadOnly: z
      .array(z.string().refine((p) => path.isAbsolute(p), 'must be an absolute path, e.g. /opt/datasets').refine((p) => existsSync(p), 'does not exist on this worker; give an existing directory or file'))
      .max(32)
      .default([]),
    /**
     * Labels of this worker (`{ region: 'eu-west', gpu: 'h100' }`, CLI `--placement KEY=VALUE`):
     * besides the base queue it serves every placement queue whose labels these satisfy (each
     * label equal). The label `fingerprint` is set from {@link fingerprint}. Default none.
     */
    placement: z.record(z.string().min(1).max(64), z.string().max(256)).default({}),
    /**
     * Environment fingerprint (label `fingerprint`): a spec naming `sandbox.fingerprint` runs only
     * on a worker with exactly that value. Default computed (`environmentFingerprint`: package,
     * node and python versions, env `ROLLOUT_QUEUE_IMAGE_ID`).
     */
    fingerprint: z.string().min(1).max(256).optional(),
    /**
     * Evaluations (`class: 'evaluation'`) run at once, in queues of their own, apart from
     * `concurrency` (which each rollout queue gets). Default 1, bounds 1–256.
     */
    evalConcurrency: z.number().int().min(1).max(256).default(1),
    /** How often the worker looks for new placement queues (`keys.placements()`), ms. Default 1 000. */
    placementPollMs: z.number().int().min(50).max(600_000).default(1000),
    /**
     * OpenTelemetry spans (BullMQ's telemetry via bullmq-otel, plus a span per rollout attempt whose
     * `traceparent` the child gets as `ctx.traceparent`) to the global tracer provider. Default on
     * when env `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else off.
     */
    telemetry: z.boolean().optional(),
  })
  .strict();

/**
 * User input for a worker ({@link RolloutWorker.create}): every field optional, each with its
 * default and bounds. Written out (not inferred from {@link WorkerOptionsSchema}) so the docs
 * reach editors through the published `.d.ts`; a compile-time check keeps the two identical.
 */
export interface WorkerOptions {
  /** Redis URL (`redis://[user:pass@]host:port[/db]`, `rediss://…`, `redis+sentinel://…/<primary>`, `redis+cluster://…`; Cluster needs a hash-tagged `prefix`). Default env `REDIS_URL`, else redis://127.0.0.1:6379. */
  readonly redisUrl?: string;
  /** Queue to consume. Default `rollouts`. */
  readonly queue?: string;
  /** BullMQ key prefix. Default env `ROLLOUT_QUEUE_PREFIX`, else `rq`. */
  readonly prefix?: string;
  /**
   * Rollout slots: rollouts run at once. Slots are not processes: the rollouts share `children`
   * child processes (a spec may ask for one of its own, `sandbox.isolation: "process"`). Default 2,
   * bounds 1–1000.
   */
  readonly concurrency?: number;
  /**
   * Shared rollout child processes per heap limit (`sandbox.memoryMb`) that host the slots.
   * Default one per 32 slots (`concurrency` + `evalConcurrency`), at most one per core and one
   * per 256 MiB of free memory, at least 1 (`defaultChildren`). More children: more CPU for run
   * code and fewer neighbours per crash; fewer: less memory. Bounds 1–256.
   */
  readonly children?: number;
  /**
   * A shared child holding two rollouts or more whose event loop has not turned for this long is
   * killed, ms: its rollouts are handed back without counting a re-dispatch, the one whose code
   * blocked it (when the child can tell) retries in a child of its own. Default 10 000.
   */
  readonly blockedLoopMs?: number;
  /**
   * Module patterns added to the Ref allowlist (`rollout-queue`, `rollout-queue/*` are
   * always allowed). Widening lets whoever can write to the queue run that code here; it
   * is logged at start. Default none.
   */
  readonly allow?: string[];
  /** Worker name in Results, logs and BullMQ (`processedBy`). Default `<hostname>-<pid>`. */
  readonly name?: string;
  /**
   * BullMQ lock TTL in ms (BullMQ `lockDuration`, its default 30 000). A dead worker's
   * leases come back after this plus up to two `stalledIntervalMs`. Default 5 000 (renewed
   * every 2 500): safe because rollouts run in children, never on the event loop that renews
   * locks; with the default stalled interval a dead worker's lease runs again within ≤ 10 s
   * (`npm run bench:recovery`).
   */
  readonly lockDurationMs?: number;
  /** How often BullMQ's stalled check runs, ms (BullMQ `stalledInterval`, its default 30 000). Default 2 000. */
  readonly stalledIntervalMs?: number;
  /**
   * Re-dispatches a lease may have (stalls, child crashes, hangs, start failures, missing
   * secrets, any mix); the next failure ends it as `infrastructure`. Default 2. Also
   * BullMQ's `maxStalledCount`, so a lease whose workers keep dying fails there too.
   */
  readonly maxRedispatches?: number;
  /** On close, how long active rollouts may run before being handed back, ms. Default 30 000. */
  readonly shutdownGraceMs?: number;
  /**
   * Base of the back-off before a transient failure (an `InfrastructureError`, connection
   * refused/reset, DNS failure, HTTP 408/429/5xx) is re-dispatched: the n-th waits
   * `transientBackoffMs × 2^n` with equal jitter, capped at 30 s, in BullMQ's delayed set.
   * Default 1 000; 0 re-dispatches at once.
   */
  readonly transientBackoffMs?: number;
  /**
   * How long past `timeouts.runMs` (or `rewardMs`) a child may take to report the overrun
   * itself before the worker kills its process tree and reports `RunTimeout` /
   * `RewardTimeout`, ms. Default 250.
   */
  readonly deadlineGraceMs?: number;
  /** After asking a child to abort, how long before its tree is SIGKILLed, ms. Default 2 000. */
  readonly killGraceMs?: number;
  /** Retire a child after this many rollouts. Default Infinity (children are recycled on memory, `maxChildRssMb`). */
  readonly maxRolloutsPerChild?: number;
  /**
   * Retire a child whose RSS after a rollout exceeds this, MiB. Default 2048. The child reads its
   * RSS at most every 100 ms, and at once when V8's memory grew 16 MiB since (see child-rss.ts).
   */
  readonly maxChildRssMb?: number;
  /**
   * Largest output a run function may return, bytes of its JSON text (a lower bound: UTF-16 code
   * units); a larger one ends `model` / `OutputTooLarge`. Default 64 MiB (1 KiB–512 MiB).
   */
  readonly maxOutputBytes?: number;
  /**
   * Largest job this worker runs, bytes of its data's JSON text (a lower bound: UTF-16 code
   * units); a larger one ends `caller` / `SpecTooLarge`, whoever wrote it. Default 64 MiB (1 KiB–512 MiB).
   */
  readonly maxSpecBytes?: number;
  /** How long a new child may take to report ready, ms. Default 10 000. */
  readonly childStartTimeoutMs?: number;
  /** Extra node flags for children (e.g. `--enable-source-maps`). Default none. */
  readonly childExecArgv?: string[];
  /** Port of the Prometheus `/metrics` and `/healthz` endpoint; unset = no endpoint. */
  readonly metricsPort?: number;
  /** Host the metrics endpoint binds. Default 127.0.0.1. */
  readonly metricsHost?: string;
  /**
   * Start even though Redis' `maxmemory-policy` may evict keys (anything but `noeviction`);
   * a warning is logged instead. Default false: `create` throws `EvictionPolicyError`.
   */
  readonly allowEviction?: boolean;
  /** `/healthz` turns 503 when work was due for this long with no rollout started here, ms. Default 60 000. */
  readonly livenessMs?: number;
  /**
   * How rollout attempts are contained (src/sandbox, docs/security.md): `auto` takes the
   * strongest level the host allows and lists each open boundary (`containmentGaps`);
   * `sealed` (or `strict`) refuses to start with any gap; `namespace+cgroup`, `namespace`,
   * `cgroup` and `process-group` force that weaker level at most, on purpose (tests, trusted
   * programs that need the host; see `ContainmentMode`). Default env
   * `ROLLOUT_QUEUE_CONTAINMENT`, else `auto`.
   */
  readonly containment?: ContainmentMode;
  /**
   * Grant the host network to the programs of specs that ask for it (`sandbox.network:
   * "host"`; CLI `--allow-network`). Default false: such a spec ends `caller` /
   * `NetworkNotAllowed`, and every program has only its own loopback.
   */
  readonly allowNetwork?: boolean;
  /**
   * Absolute host paths (directories or files, existing) the programs of specs see read-only,
   * at the same path, besides the system (/usr, /etc) and the interpreters' installations
   * (CLI `--expose PATH`, repeatable). Default none.
   */
  readonly exposeReadOnly?: string[];
  /**
   * Labels of this worker (`{ region: 'eu-west', gpu: 'h100' }`, CLI `--placement KEY=VALUE`):
   * besides the base queue it serves every placement queue whose labels these satisfy (each
   * label equal). The label `fingerprint` is set from {@link fingerprint}. Default none.
   */
  readonly placement?: Record<string, string>;
  /**
   * Environment fingerprint (label `fingerprint`): a spec naming `sandbox.fingerprint` runs only
   * on a worker with exactly that value. Default computed (`environmentFingerprint`: package,
   * node and python versions, env `ROLLOUT_QUEUE_IMAGE_ID`).
   */
  readonly fingerprint?: string;
  /**
   * Evaluations (`class: 'evaluation'`) run at once, in queues of their own, apart from
   * `concurrency` (which each rollout queue gets). Default 1, bounds 1–256.
   */
  readonly evalConcurrency?: number;
  /** How often the worker looks for new placement queues (`keys.placements()`), ms. Default 1 000. */
  readonly placementPollMs?: number;
  /**
   * OpenTelemetry spans (BullMQ's telemetry via bullmq-otel, plus a span per rollout attempt whose
   * `traceparent` the child gets as `ctx.traceparent`) to the global tracer provider. Default on
   * when env `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else off.
   */
  readonly telemetry?: boolean;
  /** pino logger for the worker's JSON logs. Default: pino on stderr, level `LOG_LEVEL` or `info`. */
  readonly logger?: Logger;
}

// Fails to compile when WorkerOptions and WorkerOptionsSchema drift apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const workerOptionsMatchSchema: Same<Required<Omit<WorkerOptions, 'logger'>>, Required<{ -readonly [K in keyof z.input<typeof WorkerOptionsSchema>]: z.input<typeof WorkerOptionsSchema>[K] }>> = true;
void workerOptionsMatchSchema;

/** Fully defaulted, frozen worker options. */
export type CompiledWorkerOptions = Readonly<
  Omit<z.output<typeof WorkerOptionsSchema>, 'redisUrl' | 'prefix' | 'name' | 'containment' | 'fingerprint' | 'telemetry' | 'children'> & {
    /** Shared rollout children per heap limit (given, or `defaultChildren` of the slots). */
    children: number;
    /** Tracing on (`telemetry`, else env OTEL_EXPORTER_OTLP_ENDPOINT). */
    tracing: boolean;
    redisUrl: string;
    /** The worker's fingerprint (given, or computed at start). */
    fingerprint: string;
    /** `placement` plus `fingerprint`: what placement queues are matched against. */
    labels: Readonly<Record<string, string>>;
    containment: ContainmentMode;
    prefix: string;
    name: string;
    /** The effective allowlist: built-ins plus `allow`. */
    allowlist: readonly string[];
  }
>;

/**
 * Validates and defaults worker options.
 * @throws Error naming the option (or env ROLLOUT_QUEUE_CONTAINMENT / ROLLOUT_QUEUE_LAUNCHER), what was wrong and the allowed range.
 */
export function compileWorkerOptions(input: WorkerOptions): CompiledWorkerOptions {
  const { logger: _logger, ...rest } = input;
  const parsed = WorkerOptionsSchema.safeParse(rest);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.code === 'unrecognized_keys' && issue.path.length === 0) {
      throw new Error(`RolloutWorker.create: ${unknownOptionsText(issue.keys, [...Object.keys(WorkerOptionsSchema.shape), 'logger'])}`);
    }
    throw new Error(`worker option ${issue?.path.join('.') || '(options)'}: ${issue?.message ?? 'invalid'}`);
  }
  const options = parsed.data;
  const containment = options.containment ?? process.env.ROLLOUT_QUEUE_CONTAINMENT ?? 'auto';
  if (!CONTAINMENT_MODES.includes(containment as ContainmentMode)) {
    throw new Error(`worker option containment: "${containment}" (from env ROLLOUT_QUEUE_CONTAINMENT) is not one of ${CONTAINMENT_MODES.join(', ')}`);
  }
  // Read by detectContainment at the worker's start; refused here, before anything starts.
  const launcher = process.env.ROLLOUT_QUEUE_LAUNCHER;
  if (launcher && !LAUNCHER_CHOICES.includes(launcher as LauncherChoice)) {
    throw new Error(`worker option launcher: "${launcher}" (from env ROLLOUT_QUEUE_LAUNCHER) is not one of ${LAUNCHER_CHOICES.join(', ')}; unset it for auto`);
  }
  const allowlist = [...DEFAULT_ALLOWLIST, ...options.allow.filter((pattern) => !DEFAULT_ALLOWLIST.includes(pattern))];
  // Compiled once here so a malformed --allow pattern stops the worker at start (AllowlistError).
  Allowlist.compile(allowlist);
  if (FINGERPRINT_LABEL in options.placement) {
    throw new Error(`worker option placement: the label "${FINGERPRINT_LABEL}" is set by the fingerprint option (--fingerprint), not by --placement`);
  }
  const redisUrl = options.redisUrl ?? process.env.REDIS_URL ?? DEFAULT_REDIS_URL;
  const prefix = options.prefix ?? process.env.ROLLOUT_QUEUE_PREFIX ?? DEFAULT_PREFIX;
  const clusterProblem = redisTopology(redisUrl) === 'cluster' ? clusterPrefixProblem(prefix, options.queue) : undefined;
  if (clusterProblem) throw new Error(`worker option prefix: ${clusterProblem}`);
  const fingerprint = options.fingerprint ?? environmentFingerprint(fingerprintInputs());
  const { telemetry, children, ...parsedOptions } = options;
  return Object.freeze({
    ...parsedOptions,
    children: children ?? defaultChildren(options.concurrency + options.evalConcurrency),
    tracing: tracingEnabled(telemetry),
    fingerprint,
    labels: Object.freeze({ ...options.placement, [FINGERPRINT_LABEL]: fingerprint }),
    redisUrl,
    prefix,
    name: options.name ?? `${os.hostname()}-${process.pid}`,
    containment: containment as ContainmentMode,
    allowlist: Object.freeze(allowlist),
  });
}
