import type { RolloutDraft } from '../producer/index.js';
import * as builtinRewards from '../rewards/index.js';
import { checkOutputFits, CODE_RUNNER_OPTION_KEYS, compileCodeRunnerOptions } from '../runners/code-runner-options.js';
import { checkBareSpecifier, isSpecifierRefusal } from '../ref/index.js';
import { DEFAULT_HANG_MS, DEFAULT_RUN_MS, parseRefTarget, RefSchema, type Ref, type Rendered } from '../spec/index.js';
import { UsageError } from './errors.js';
import { MSG, typeName } from './messages.js';
import type { TaskLine } from './tasks-file.js';

export type { RolloutDraft };

/** What every draft of a run shares (from the command line or `run.json`). */
export interface DraftTemplate {
  readonly rendered: Rendered;
  readonly run: Ref;
  readonly reward: Ref;
  /** Environment variable names the worker passes on (never values). */
  readonly env?: readonly string[];
  readonly runMs?: number;
  readonly rewardMs?: number;
  readonly hangMs?: number;
  readonly memoryMb?: number;
  /** Labels a worker must have (`run --placement`); a task's own `placement` object wins. */
  readonly placement?: Readonly<Record<string, string>>;
  /** `sandbox.fingerprint` of every spec (`run --fingerprint`). */
  readonly fingerprint?: string;
  /** Spec `class` (`run --class`). */
  readonly class?: 'rollout' | 'evaluation';
  /** Spec `goldKeys`: task keys kept from the run besides the reward's own (`run --gold-key`). */
  readonly goldKeys?: readonly string[];
  /** Spec `goldVisibleToRun` (`run --gold-visible-to-run`): the run gets the whole task. */
  readonly goldVisibleToRun?: boolean;
}

/**
 * Parses a JSON option value into a config object.
 * @throws UsageError naming the option when it is not JSON or not an object.
 */
export function parseConfigOption(option: string, text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(MSG.badJsonOption(option, (err as Error).message));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(MSG.jsonOptionNotObject(option, typeName(value)));
  }
  return value as Record<string, unknown>;
}

/** The module of this package that holds the built-in factories of each Ref option. */
const BUILTIN_MODULES: Readonly<Record<string, string>> = { '--run': 'rollout-queue/runners', '--reward': 'rollout-queue/rewards' };
/** Ref options this package has no built-in for, with what to name instead. */
const NO_BUILTIN: Readonly<Record<string, string>> = { '--dispatch': 'the module:export of a Dispatch factory of your own (e.g. @acme/evals:solve), which workers --allow' };

/**
 * Builds a Ref from `--run`/`--reward` and its config, checked by the wire schema.
 * @param option how the pair is named in messages, e.g. `--run`.
 * @throws UsageError naming the option and the path of the first bad value, a module no worker
 *   imports (`checkBareSpecifier`: a Node builtin, a path, a URL), or a module of this
 *   package that is not the option's built-ins (`rollout-queue/runners` for `--run`, `rollout-queue/rewards` for `--reward`).
 */
export function buildRef(option: string, target: string, config: Record<string, unknown>): Ref {
  const parsedTarget = parseRefTarget(target);
  if (typeof parsedTarget === 'string') throw new UsageError(MSG.badRefTarget(option, parsedTarget));
  // What every worker refuses whatever its allowlist (a Node builtin, a path, a URL) is refused
  // here: enqueued, it stopped the run on its first caller Result (fresh-user report: node:child_process).
  const specifier = checkBareSpecifier(parsedTarget.module);
  if (isSpecifierRefusal(specifier)) throw new UsageError(MSG.badRefTarget(option, specifier.reason));
  // This package's own modules are known here: another one (a typo such as rollout-queue/runner)
  // would reach the workers and end every lease `caller` (fresh-user report).
  const builtin = BUILTIN_MODULES[option];
  const ownModule = parsedTarget.module === 'rollout-queue' || parsedTarget.module.startsWith('rollout-queue/');
  if (builtin && ownModule && parsedTarget.module !== builtin) throw new UsageError(MSG.unknownBuiltinModule(option, target, builtin));
  // Fresh-user report: `gateway --dispatch rollout-queue/dispatch:nope` started, and every POST /dispatch answered 400.
  const instead = NO_BUILTIN[option];
  if (instead && ownModule) throw new UsageError(MSG.noBuiltinFor(option, target, instead));
  const parsed = RefSchema.safeParse({ $ref: target, config });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(MSG.badRefConfig(`${option}-config`, issue?.path.join('.') ?? '', issue?.message ?? 'invalid'));
  }
  return parsed.data as Ref;
}

/**
 * Gives the built-in code runner the artifact file's name as `entrypoint` when the config
 * does not name one, so `--artifact solve.py --run rollout-queue/runners:codeRunner` works.
 * Other run factories get their config untouched.
 */
export function withDefaultEntrypoint(run: Ref, entrypoint: string | undefined): Ref {
  const target = parseRefTarget(run.$ref);
  if (entrypoint === undefined || typeof target === 'string' || target.exportName !== 'codeRunner') return run;
  if (run.config.entrypoint !== undefined) return run;
  return { ...run, config: { ...run.config, entrypoint } };
}

/**
 * Refuses, before anything is enqueued, a directory artifact that lacks the built-in code
 * runner's entrypoint (every rollout would otherwise end `infrastructure` after its
 * re-dispatches: codeRunner cannot tell a typo from an artifact that did not arrive whole) and
 * a config codeRunner's factory refuses (no `entrypoint`, a misspelt key), for any artifact,
 * and an export of `rollout-queue/runners` other than `codeRunner`, and a `maxOutputBytes` the
 * rollout child cannot report within `memoryMb` (`--memory-mb`; every rollout would end `caller`).
 * Other run factories pass through.
 * @throws UsageError naming the entrypoint and the artifact's files, or the refused field.
 */
export function checkBuiltinRun(run: Ref, rendered: Rendered, memoryMb: number): void {
  const target = parseRefTarget(run.$ref);
  if (typeof target === 'string') return;
  if (target.module === 'rollout-queue/runners' && target.exportName !== 'codeRunner') throw new UsageError(MSG.unknownBuiltin('--run', run.$ref, ['codeRunner']));
  if (target.exportName !== 'codeRunner') return;
  // The same checks the worker's codeRunner makes: refused here, nothing is enqueued (exit 2)
  // rather than every lease ending `caller` on the worker.
  // A directory artifact has no file name to default to: say which option to add and with what
  // (fresh-user report: it said "config.entrypoint must be … got undefined" of an option never given).
  if (run.config.entrypoint === undefined && typeof rendered !== 'string' && 'files' in rendered) {
    // A misspelt key is the likelier fault then (fresh-user report: "entrypont" got "needs … entrypoint").
    const allowed = new Set<string>(CODE_RUNNER_OPTION_KEYS);
    if (Object.keys(run.config).some((key) => !allowed.has(key))) {
      try {
        compileCodeRunnerOptions(run.config);
      } catch (err) {
        throw new UsageError(MSG.runConfigRefused((err as Error).message));
      }
    }
    throw new UsageError(MSG.entrypointMissing(Object.keys(rendered.files)));
  }
  let compiled: ReturnType<typeof compileCodeRunnerOptions>;
  try {
    compiled = compileCodeRunnerOptions(run.config);
  } catch (err) {
    throw new UsageError(MSG.runConfigRefused((err as Error).message));
  }
  try {
    checkOutputFits(compiled.maxOutputBytes, memoryMb);
  } catch (err) {
    throw new UsageError(MSG.outputOverMemory((err as Error).message));
  }
  const { entrypoint } = compiled;
  if (typeof rendered === 'string' || !('files' in rendered)) return;
  if (!Object.hasOwn(rendered.files, entrypoint)) throw new UsageError(MSG.entrypointNotInArtifact(entrypoint, Object.keys(rendered.files)));
}

/**
 * Refuses, before anything is enqueued, a config that a built-in reward's factory
 * (`rollout-queue/rewards:<name>`) refuses, such as a misspelt `goldKey`: the same check the
 * worker makes, which would otherwise end every lease `caller` (or wait for a worker).
 * Other rewards pass through.
 * @throws UsageError naming `--reward-config` and the field, or `--reward` for an export the
 *   module does not have (a misspelt `lastNumbr` would end every lease `caller`).
 */
export function checkBuiltinRewardConfig(reward: Ref): void {
  const target = parseRefTarget(reward.$ref);
  if (typeof target === 'string' || target.module !== 'rollout-queue/rewards') return;
  const factory = (builtinRewards as Record<string, unknown>)[target.exportName];
  if (typeof factory !== 'function') throw new UsageError(MSG.unknownBuiltin('--reward', reward.$ref, Object.keys(builtinRewards).sort()));
  try {
    (factory as (config: unknown) => unknown)(reward.config);
  } catch (err) {
    throw new UsageError(MSG.rewardConfigRefused((err as Error).message));
  }
}

/** One draft per task, all sharing the template. */
export function buildDrafts(tasks: readonly TaskLine[], template: DraftTemplate): RolloutDraft[] {
  // Against the other's default when only one is given (fresh-user report: --hang-ms 1000 alone
  // killed a slow, healthy rollout as wedged three times, then ended it infrastructure).
  if (template.runMs !== undefined || template.hangMs !== undefined) {
    const runMs = template.runMs ?? DEFAULT_RUN_MS;
    const hangMs = template.hangMs ?? DEFAULT_HANG_MS;
    if (hangMs <= runMs) throw new UsageError(MSG.hangBelowRun(hangMs, runMs, { runDefault: template.runMs === undefined, hangDefault: template.hangMs === undefined }));
  }
  const timeouts = {
    ...(template.runMs !== undefined ? { runMs: template.runMs } : {}),
    ...(template.rewardMs !== undefined ? { rewardMs: template.rewardMs } : {}),
    ...(template.hangMs !== undefined ? { hangMs: template.hangMs } : {}),
  };
  const sandbox = {
    env: [...(template.env ?? [])],
    ...(template.memoryMb !== undefined ? { memoryMb: template.memoryMb } : {}),
    ...(template.fingerprint !== undefined ? { fingerprint: template.fingerprint } : {}),
  };
  return tasks.map(({ taskKey, task, meta }) => {
    // A task line's own `placement` (an object of labels) wins over --placement; checkDrafts
    // refuses one of another type, and the spec schema checks its values (strings).
    const own = (task as { placement?: unknown }).placement;
    const placement = own !== null && typeof own === 'object' && !Array.isArray(own) ? (own as Record<string, string>) : template.placement;
    return {
      taskKey,
      rendered: template.rendered,
      task,
      run: template.run,
      reward: template.reward,
      sandbox,
      ...(placement && Object.keys(placement).length > 0 ? { placement: { ...placement } } : {}),
      ...(template.class !== undefined ? { class: template.class } : {}),
      ...(Object.keys(timeouts).length > 0 ? { timeouts } : {}),
      ...(template.goldKeys !== undefined && template.goldKeys.length > 0 ? { goldKeys: [...template.goldKeys] } : {}),
      ...(template.goldVisibleToRun === true ? { goldVisibleToRun: true } : {}),
      ...(meta !== undefined ? { meta } : {}),
    };
  });
}
