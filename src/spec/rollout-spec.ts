import semver from 'semver';
import { z } from 'zod';
import { findJsonDataIssue } from './json-data.js';
import { LeaseIdSchema, RunIdSchema } from './ids.js';
import { RefSchema } from './ref-schema.js';
import { describeValue } from './factory-config.js';
import { SANDBOX_NETWORKS } from './sandbox-defaults.js';
import { MetaSchema } from './meta.js';

/** Name of an environment variable: what `sandbox.env` lists, never its value. */
export const EnvNameSchema = z
  .string()
  .regex(/^[A-Z_][A-Z0-9_]*$/, 'sandbox.env lists variable NAMES like "OPENAI_API_KEY" (upper case, digits, "_"), never values');

/** An npm package name (`rollout-queue`, `@scope/name`), a key of `sandbox.requires`. */
const PackageNameSchema = z
  .string()
  .regex(/^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/, 'sandbox.requires keys are npm package names like "rollout-queue" or "@scope/name"');

/** A node-semver range (`>=0.1.0 <0.2.0`, `^1.2.0`), a value of `sandbox.requires`. */
const SemverRangeSchema = z
  .string()
  .max(256)
  .refine((range) => semver.validRange(range) !== null, { message: 'sandbox.requires values are semver ranges like ">=0.1.0 <0.2.0" or "^1.2.0" (https://github.com/npm/node-semver#ranges)' });

/** Least `sandbox.memoryMb`, MiB: below it a rollout child's own heap does not fit. */
export const MIN_MEMORY_MB = 64;
/** Default `sandbox.memoryMb`, MiB. */
export const DEFAULT_MEMORY_MB = 1024;
export { DEFAULT_CPUS, DEFAULT_DISK_MB, SANDBOX_NETWORKS } from './sandbox-defaults.js';

/**
 * Where and how a rollout runs on the worker.
 * - `env`: names of environment variables whose values the worker reads from its own
 *   environment into `ctx.secrets` (and the code runner's child env). Default `[]`.
 * - `fingerprint`: opaque id of the environment the rollout expects (image digest, lockfile hash).
 * - `memoryMb`: heap limit in MiB (`--max-old-space-size`) of the child process the rollout runs
 *   in, which it shares with the other rollouts of that limit the child hosts (a limit per child,
 *   not per rollout; the child is recycled past the worker's `maxChildRssMb`); a codeRunner
 *   program's own memory limit. Default 1024, bounds 64–65536.
 * - `isolation`: `shared` (default) runs the rollout in a child process shared with other
 *   rollouts; `process` gives it a child of its own for its whole attempt, for run code not
 *   trusted to share (global state, native modules that may crash, a loop that blocks for long).
 *   Either way a codeRunner program runs in its own sandbox.
 * - `requires`: worker package versions the rollout needs, package name → semver range
 *   (`{ "rollout-queue": ">=0.1.0 <0.2.0" }`, node-semver syntax, https://github.com/npm/node-semver#ranges).
 *   A worker whose installed version is missing or outside a range refuses the attempt
 *   (`VersionSkew`) and hands the lease back for another worker. Optional.
 * The next three bound each program the plane spawns for the rollout (codeRunner's artifact, a
 * judge program), a hostile tenant (docs/security.md); the worker's own run and reward code is
 * trusted and not bound by them:
 * - `network`: `none` (default: only the program's own loopback) or `host` (the worker's
 *   network). A worker grants `host` only when started with `--allow-network`; otherwise the
 *   rollout ends `caller` / `NetworkNotAllowed`. Optional.
 * - `cpus`: CPU time per attempt in CPUs (a cgroup quota: `cpus` × 100 ms per 100 ms, over all
 *   its threads). Default 1, bounds 0.01–1024. Optional.
 * - `diskMb`: what the program may write, MiB, to its work dir, /tmp and /dev/shm together (one
 *   tmpfs, so it counts against `memoryMb` too as it is written). Over it writes fail with
 *   ENOSPC, and a program that then fails ends `model` / `DiskLimit`. Default 512, bounds 1–65536. Optional.
 */
export const SandboxSpecSchema = z
  .object({
    env: z.array(EnvNameSchema).max(64).default([]),
    fingerprint: z.string().max(256).optional(),
    memoryMb: z.number().int().min(MIN_MEMORY_MB).max(65_536).default(DEFAULT_MEMORY_MB),
    isolation: z
      .enum(['shared', 'process'], { error: 'sandbox.isolation is "shared" (default: a child process shared with other rollouts) or "process" (a child process of its own)' })
      .optional()
      .describe('shared (default): the run code shares a worker child process with other rollouts; process: a child process of its own for the attempt.'),
    requires: z
      .record(PackageNameSchema, SemverRangeSchema, {
        // zod reports a bad key as "Invalid key in record": say which key and what it must be.
        error: (issue) => (issue.code === 'invalid_key' ? 'sandbox.requires keys are npm package names like "rollout-queue" or "@scope/name"' : undefined),
      })
      .optional(),
    network: z.enum(SANDBOX_NETWORKS).optional(),
    cpus: z.number().min(0.01).max(1024).optional(),
    diskMb: z.number().int().min(1).max(65_536).optional(),
  })
  .strict()
  .meta({ id: 'SandboxSpec' });
export type SandboxSpec = z.infer<typeof SandboxSpecSchema>;

/** Default `timeouts.scheduleToStartMs`: 5 minutes. */
export const DEFAULT_SCHEDULE_TO_START_MS = 300_000;
/** Default of `timeouts.rewardMs`: 60 000 ms (1 min). */
export const DEFAULT_REWARD_MS = 60_000;
/** Default of `timeouts.runMs`: 600 000 ms (10 min). */
export const DEFAULT_RUN_MS = 600_000;
/** Default of `timeouts.hangMs`: 900 000 ms (15 min). */
export const DEFAULT_HANG_MS = 900_000;

/**
 * Time limits of one rollout, in milliseconds.
 * - `runMs`: the rollout's own limit (default 600 000 = 10 min), for run and reward together.
 *   Past it `ctx.signal` aborts and the result is `model` / `RunTimeout` (or `RewardTimeout`
 *   when the reward was running): the thing under test was too slow. The worker enforces it
 *   from outside the child too, so a run or reward that blocks its event loop is killed there.
 * - `rewardMs`: the reward's own limit (default 60 000 = 1 min), inside what is left of
 *   `runMs`. Past it the result is `model` / `RewardTimeout`, on the first attempt (a reward
 *   that hangs on an output hangs on every worker).
 * - `hangMs`: the plane's limit (default 900 000 = 15 min). Past it the worker kills the
 *   child's process tree and re-dispatches the lease (`infrastructure` after two). Keep it
 *   above `runMs`, so a slow rollout is judged before it is presumed wedged.
 * - `scheduleToStartMs`: the coordinator ends a lease still without a Result this long after
 *   its enqueue, *while no worker served the queue all that time*, as `infrastructure` /
 *   `NoWorker` (default 300 000 = 5 min; 0 = never): nobody took it, or the worker that took it
 *   died and no worker is left to re-dispatch it. A queue whose workers are merely busy never
 *   triggers it, so a long queue behind back-pressure is safe; a run started with no worker (or
 *   whose workers all died) ends instead of waiting forever.
 * - `scheduleToCloseMs`: the coordinator ends a lease without a Result this long after its
 *   enqueue as `infrastructure` / `DeadlineExceeded`, whatever it is doing (default none). An
 *   attempt still running is not killed (`hangMs` bounds it); its late answer is dropped and
 *   counted in `duplicatesDropped`.
 * Both are measured by the Redis clock (enqueue time and now from `TIME`), never a host's.
 */
export const TimeoutsSchema = z
  .object({
    runMs: z.number().int().min(1).max(86_400_000).default(DEFAULT_RUN_MS),
    rewardMs: z.number().int().min(1).max(86_400_000).default(DEFAULT_REWARD_MS),
    hangMs: z.number().int().min(100).max(86_400_000).default(DEFAULT_HANG_MS),
    scheduleToStartMs: z.number().int().min(0).max(30 * 86_400_000).default(DEFAULT_SCHEDULE_TO_START_MS),
    scheduleToCloseMs: z.number().int().min(1000).max(30 * 86_400_000).optional(),
  })
  .strict()
  .meta({ id: 'Timeouts' });
export type Timeouts = z.infer<typeof TimeoutsSchema>;

/**
 * A stored artifact, by content hash: the producer keeps one copy per run in Redis
 * (`keys.runArtifact(runId, sha256)`, the JSON text of the `rendered` value) and every job of
 * the run carries only this reference. Workers fetch it once and cache it on disk by hash,
 * and hand the run function the stored value, never this reference.
 * - `sha256`: lower-case hex SHA-256 of the stored JSON text (UTF-8).
 * - `bytes`: size of that text in bytes.
 */
export const StoredRenderedSchema = z
  .object({
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'sha256 must be 64 lower-case hex digits'),
    bytes: z.number().int().min(0),
  })
  .strict()
  .meta({ id: 'StoredRendered' });
export type StoredRendered = z.infer<typeof StoredRenderedSchema>;

/** The artifact under test: source text, files by relative path, or (written by the producer) a stored artifact's hash. */
export const RenderedSchema = z
  .union([
    z.string().describe('The artifact as one string (e.g. a program or a prompt).'),
    z
      .object({ files: z.record(z.string().min(1).max(512), z.string()) })
      .strict()
      .describe('Files by relative path, written to a fresh directory before the run.'),
    StoredRenderedSchema.describe("The run's stored artifact by content hash (the producer writes this form for artifacts of 1 KiB or more)."),
  ])
  .meta({ id: 'Rendered' });
export type Rendered = z.infer<typeof RenderedSchema>;

/** True when `rendered` is the stored-artifact reference rather than the artifact itself. */
export function isStoredRendered(rendered: Rendered): rendered is StoredRendered {
  return typeof rendered === 'object' && 'sha256' in rendered;
}

/** A task: a JSON object; `task.id` (string or number), when present, names it. */
export const TaskSchema = z
  .record(z.string(), z.unknown())
  .superRefine((task, ctx) => {
    const issue = findJsonDataIssue(task, '', { scalarArraysOnly: false });
    if (issue) ctx.addIssue({ code: 'custom', message: `${issue.path || '(task)'}: ${issue.message}` });
    const id = task.id;
    if (id !== undefined && typeof id !== 'string' && typeof id !== 'number') {
      // Fresh-user report: `"id": null` was refused where leaving it out was taken; say that.
      ctx.addIssue({ code: 'custom', path: ['id'], message: `task.id must be a string or a number when present, got ${describeValue(id)}; leave it out and the task is named by its position (its line in a tasks file)` });
    }
  })
  .meta({ id: 'Task', description: 'JSON object; task.id names it.' });
export type Task = z.infer<typeof TaskSchema>;

/**
 * One rollout as it travels on the queue (BullMQ job data). Version 1.
 * Produced by the coordinator; every field is data, nothing is code.
 */
export const RolloutSpecSchema = z
  .object({
    v: z.literal(1).describe('Wire version; workers refuse other versions as a caller error.'),
    leaseId: LeaseIdSchema,
    runId: RunIdSchema,
    runAttemptId: z.string().min(1).max(128).describe('Names this submission of the run (changes when a run is restarted from scratch).'),
    rendered: RenderedSchema,
    task: TaskSchema,
    run: RefSchema.describe('run(rendered, task, ctx) → output'),
    reward: RefSchema.describe('reward(task, output, ctx) → number'),
    // A function, so each parse gets its own `env` array: zod shallow-clones a default value,
    // and a shared array would carry one spec's names into every later spec's default.
    sandbox: SandboxSpecSchema.default(() => ({ env: [], memoryMb: DEFAULT_MEMORY_MB })),
    placement: z
      .record(z.string().max(64), z.string().max(256))
      .default({})
      .describe('Labels for where the rollout should run (e.g. {"gpu":"a100"}); passed to ctx.placement.'),
    timeouts: TimeoutsSchema.default({ runMs: DEFAULT_RUN_MS, rewardMs: DEFAULT_REWARD_MS, hangMs: DEFAULT_HANG_MS, scheduleToStartMs: DEFAULT_SCHEDULE_TO_START_MS }),
    class: z.enum(['rollout', 'evaluation']).default('rollout'),
    traceparent: z
      .string()
      .regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, 'traceparent must be a W3C trace context header like 00-<32 hex>-<16 hex>-01')
      .optional()
      .describe('W3C traceparent of the span that enqueued the lease (set by the producer when tracing is on); the worker hands its own attempt span to the child as ctx.traceparent.'),
    rewardRange: z
      .tuple([z.number(), z.number()])
      .default([0, 1])
      .refine(([lo, hi]) => Number.isFinite(lo) && Number.isFinite(hi) && lo <= hi, 'rewardRange must be [min, max] with finite min <= max')
      .describe('A reward outside [min, max] is a caller error.'),
    goldKeys: z
      .array(z.string().min(1, 'goldKeys lists task keys like "answer"; an empty string names no key').max(256))
      .max(64)
      .optional()
      .describe(
        "Task keys private to the reward (its gold), besides those the reward declares (a built-in reward's goldKey, goldKey/gold_key/goldKeys/gold_keys in any config of its Ref, the resolved reward function's goldKeys): the worker removes them all from the task the run receives; the reward receives the whole task.",
      ),
    goldVisibleToRun: z
      .boolean()
      .optional()
      .describe(
        'true hands the run the whole task, gold included (default false: the gold keys are removed). Only for a trusted run that needs them, never for a model-written program; every Result of the lease records it as goldVisibleToRun.',
      ),
    meta: MetaSchema.optional(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    // Producers route events by the lease id's run part and workers count by `runId`: they must agree.
    if (!spec.leaseId.startsWith(`${spec.runId}.`)) {
      ctx.addIssue({ code: 'custom', path: ['leaseId'], message: `leaseId must start with runId ${JSON.stringify(spec.runId)} and "."; build it with leaseIdFor(runId, taskKey)` });
    }
  })
  .meta({ id: 'RolloutSpec', title: 'RolloutSpec v1' });

/** A parsed, fully defaulted rollout spec. */
export type RolloutSpec = z.infer<typeof RolloutSpecSchema>;
/** What a caller may write: defaults may be omitted. */
export type RolloutSpecInput = z.input<typeof RolloutSpecSchema>;
