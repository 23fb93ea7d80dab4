import { z } from 'zod';
import { DispatchRequestSchema, RefSchema, RolloutSpecSchema, SandboxSpecSchema, TimeoutsSchema, type Ref } from '../../spec/index.js';
import type { Logger } from '../../platform/logger.js';
import { ProducerOptionsSchema, type ProducerOptions } from '../../producer/index.js';
import { RolloutQueue } from '../../producer/index.js';

/** Top-level keys of a dispatch lease's task (the request's fields and `id`): never gold keys, which name scenario keys. */
const REQUEST_FIELDS: ReadonlySet<string> = new Set(['id', ...Object.keys(DispatchRequestSchema.shape)]);

/** Default of {@link QueueDispatchOptions.keepAnswerMs}: 10 minutes. */
export const DEFAULT_KEEP_ANSWER_MS = 600_000;

/**
 * Options of `queueDispatch`, one zod schema; `compileQueueDispatchOptions` checks and
 * defaults them once.
 */
export const QueueDispatchOptionsSchema = z
  .object({
    /**
     * The Dispatch the workers run: a Ref to a factory installed on the workers, e.g.
     * `ref('@acme/evals:solve', { model: 'x' })`. It is wrapped as
     * `rollout-queue/dispatch:dispatchRunner({ dispatch })`; the workers' allowlist must admit its module.
     */
    dispatch: RefSchema,
    /** A RolloutQueue to enqueue on (not closed by `close()`). Default: one created from `producerOptions`. */
    producer: z.custom<RolloutQueue>((value) => value instanceof RolloutQueue, 'producer must be a RolloutQueue').optional(),
    /** Options of the RolloutQueue(s) created when `producer` is not given (and for other queues of placements). */
    producerOptions: ProducerOptionsSchema.optional(),
    /** Bytes of files one dispatch may write with `ctx.artifacts.write` (dispatchRunner's `maxArtifactBytes`). Default 1 MiB. */
    maxArtifactBytes: z.number().int().min(0).max(67_108_864).optional(),
    /** Time limits of each dispatch's lease (see `TimeoutsSchema`); default runMs 600 000, hangMs 900 000. */
    timeouts: TimeoutsSchema.partial().optional(),
    /** The lease's sandbox: `env` names the worker passes to the dispatch, `memoryMb`. */
    sandbox: SandboxSpecSchema.partial().optional(),
    /**
     * Keys of the scenario the Dispatch must not see (its gold, e.g. `["expected"]`, which the
     * harness scores against on the coordinator): each lease's spec lists them as `goldKeys`, and
     * the workers remove them from the scenario before calling the Dispatch. Default none. A key
     * of the dispatch request itself (`cellId`, `seed`…) is refused.
     */
    goldKeys: RolloutSpecSchema.shape.goldKeys.refine((keys) => !keys?.some((key) => REQUEST_FIELDS.has(key)), {
      message: `goldKeys names keys of the scenario; ${[...REQUEST_FIELDS].join(', ')} are the dispatch request's own fields: name the scenario's gold key instead`,
    }),
    /**
     * How long a delivered dispatch's answer stays in Redis so a retried call (a client whose
     * response was lost) gets the same artifact instead of a second run, ms. Everything else the
     * call wrote is deleted at delivery. 0 keeps nothing. Default 600 000, bounds 0–86 400 000.
     */
    keepAnswerMs: z.number().int().min(0).max(86_400_000).default(DEFAULT_KEEP_ANSWER_MS),
    /**
     * Where files a dispatch wrote (`ctx.artifacts.write` on the worker) go when the caller's ctx
     * has no `artifacts.write`: `<runDir>/<runAttemptId>/<cellId>/<path>` (ids made path-safe).
     * Without it (and without `ctx.artifacts`) the files are dropped.
     */
    runDir: z.string().min(1).optional(),
  })
  .strict();

/** What a caller may pass to `queueDispatch`. */
export type QueueDispatchOptions = Omit<z.input<typeof QueueDispatchOptionsSchema>, 'dispatch' | 'producerOptions'> & {
  readonly dispatch: Ref | { readonly $ref: string; readonly config?: Record<string, unknown>; readonly call?: boolean };
  readonly producerOptions?: ProducerOptions;
};

/** Fully defaulted `queueDispatch` options. */
export interface CompiledQueueDispatchOptions {
  readonly runRef: Ref;
  readonly producer: RolloutQueue | undefined;
  readonly producerOptions: ProducerOptions;
  /** Queue of a call without a placement. */
  readonly queue: string;
  readonly timeouts: { readonly runMs?: number; readonly hangMs?: number };
  readonly sandbox: { readonly env?: readonly string[]; readonly memoryMb?: number };
  /** Scenario keys kept from the Dispatch (the spec's `goldKeys`); `[]` for none. */
  readonly goldKeys: readonly string[];
  readonly keepAnswerMs: number;
  readonly runDir: string | undefined;
  readonly logger: Logger | undefined;
}

/**
 * Checks and defaults `queueDispatch` options.
 * @throws Error naming the option path, what is allowed and the fix.
 */
export function compileQueueDispatchOptions(input: QueueDispatchOptions): CompiledQueueDispatchOptions {
  const parsed = QueueDispatchOptionsSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.map(String).join('.') || '(options)';
    throw new Error(`queueDispatch option ${path}: ${issue?.message ?? 'invalid'}; see QueueDispatchOptions for the allowed values`);
  }
  const value = parsed.data;
  const runConfig: Record<string, unknown> = { dispatch: value.dispatch };
  if (value.maxArtifactBytes !== undefined) runConfig.maxArtifactBytes = value.maxArtifactBytes;
  const producerOptions = (input.producerOptions ?? {}) as ProducerOptions;
  const producer = value.producer;
  return Object.freeze({
    runRef: { $ref: 'rollout-queue/dispatch:dispatchRunner', config: runConfig },
    producer,
    producerOptions,
    queue: producer?.options.queue ?? producerOptions.queue ?? 'rollouts',
    timeouts: value.timeouts ?? {},
    sandbox: value.sandbox ?? {},
    goldKeys: value.goldKeys ?? [],
    keepAnswerMs: value.keepAnswerMs,
    runDir: value.runDir,
    logger: producer?.options.logger ?? producerOptions.logger,
  });
}
