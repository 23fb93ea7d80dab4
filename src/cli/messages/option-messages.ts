import { DEFAULT_MEMORY_MB } from '../../spec/index.js';
import { cliCommand, shellWord } from '../cli-command.js';
import { nameList, summaryRow } from './message-parts.js';

/** Files of --artifact named in a message about its entrypoint. */
const MAX_FILES_NAMED = 10;

/** Errors about command-line options and environment variables: each names the option and the fix. */
export const OPTION_MSG = {
  notAnInteger: (value: string, min: number) => `must be a whole number >= ${min}, got "${value}"`,
  notAnIntegerIn: (value: string, min: number, max: number) => `must be a whole number from ${min} to ${max}, got "${value}"`,
  notAPort: (flag: string, value: string, example: number) =>
    `${flag} must be a port number from 0 to 65535 (0 picks a free one), got "${value}"; e.g. ${flag} ${example}`,
  notAWeight: (value: string, min: number, max: number) => `must be a number from ${min} to ${max} (the run's share of the queue's workers relative to other runs; 2 = twice a default run's), got "${value}"`,
  notUsd: (value: string) => `must be a positive amount of US dollars like 2.50, got "${value}"`,
  notCpus: (value: string) => `--cpus takes a number of CPUs from 0.01 to 1024, e.g. 1 or 0.5, got "${value}"`,
  notALabel: (value: string) => `must be KEY=VALUE with a non-empty KEY of at most 64 characters and a VALUE of at most 256 (e.g. region=eu-west), got "${value}"`,
  notAQueueName: (value: string) => `must hold only letters, digits, "_", "-" and "{}", got "${value}"`,
  notAGoldKey: (value: string) => `"${value}" is not a task key: give the key the gold is at, like answer (one key per --gold-key)`,
  goldVisibleWarning: 'warning: --gold-visible-to-run hands the run the whole task, gold included: a model-written program that prints it scores without solving anything. Each Result records goldVisibleToRun: true',
  summaryGoldVisible: (count: number) => summaryRow('gold visible to run', `${String(count).padStart(6)}   Result(s) whose run received the whole task, gold included (--gold-visible-to-run)`),
  notAnEnvName: (value: string) => `"${value}" is not a variable NAME (A-Z, 0-9, "_", not starting with a digit); pass names, never values`,
  notARunId: (what: string, value: string, max: number) =>
    `${what} must be 1 to ${max} letters, digits, "_" or "-" (no "." or ":"), got "${value}"; e.g. ${what === 'runId' ? 'eval-2026-11-29' : `${what} eval-2026-11-29`}`,
  // No option name in the example: the keys a config takes depend on its Ref (a reward's are not a runner's).
  badJsonOption: (option: string, why: string) => `${option} is not valid JSON (${why}); write a JSON object, its keys and strings in double quotes and the whole in single quotes for the shell, e.g. ${option} '{"key": "value", "count": 3}'`,
  jsonOptionNotObject: (option: string, got: string) => `${option} must be a JSON object, got ${got}`,
  badRefTarget: (option: string, why: string) => `${option}: ${why}`,
  runConfigRefused: (why: string) => `--run-config: ${why}`,
  /** `why` names the spec field `sandbox.memoryMb`, which a user of `run` sets with --memory-mb. */
  outputOverMemory: (why: string) => `--run-config with --memory-mb (sandbox.memoryMb, default ${DEFAULT_MEMORY_MB}): ${why}`,
  /** The example names the artifact's `main.*` file when it has one, else its first file. */
  entrypointMissing: (files: readonly string[]) => {
    const likely = files.find((f) => /^main\.[a-z]+$/.test(f)) ?? files[0] ?? 'main.js';
    return `--run-config: codeRunner needs the file of the --artifact directory to run, in "entrypoint": pass --run-config '${JSON.stringify({ entrypoint: likely })}' (its files: ${nameList(files.map((f) => JSON.stringify(f)), MAX_FILES_NAMED) || 'none'})`;
  },
  entrypointNotInArtifact: (entrypoint: string, files: readonly string[]) =>
    `--run-config: codeRunner's entrypoint ${JSON.stringify(entrypoint)} is not a file of --artifact (its files: ${nameList(files.map((f) => JSON.stringify(f)), MAX_FILES_NAMED) || 'none'}); name one of them in "entrypoint"`,
  /**
   * A command reward's `command[index]` names `arg`, a file here that is not shipped to the judge
   * (its directory on the worker holds only `config.files`). `shippedAs`: the base name it is
   * shipped under when a file of that name is shipped (the command then names it by another path).
   */
  judgeFileNotShipped: (index: number, arg: string, shippedAs: string | undefined) =>
    shippedAs !== undefined
      ? `--reward-config: command[${index}] is ${JSON.stringify(arg)}, but the judge's file is shipped as ${JSON.stringify(shippedAs)} (--reward-file ships a file under its base name), and the judge runs in its own directory on the worker: write ${JSON.stringify(shippedAs)} in "command". Nothing was enqueued.`
      : arg.includes('/')
        ? `--reward-config: command[${index}] is ${JSON.stringify(arg)}, a file here that is not shipped to the judge, which runs in its own directory on the worker: add --reward-file ${shellWord(arg)} and write ${JSON.stringify(arg.split('/').at(-1))} in "command" (--reward-file ships a file under its base name), or put the file's text in --reward-config's "files" under ${JSON.stringify(arg)}. Nothing was enqueued.`
        : `--reward-config: command[${index}] is ${JSON.stringify(arg)}, a file here that is not shipped to the judge, which runs in its own directory on the worker: add --reward-file ${shellWord(arg)}. Nothing was enqueued.`,
  badRefConfig: (option: string, path: string, why: string) => `${option}${path ? ` at ${path}` : ''}: ${why}`,
  badPrefix: (why: string) => `--prefix / ROLLOUT_QUEUE_PREFIX: ${why}`,
  badLogFormat: (value: string, formats: readonly string[]) =>
    `LOG_FORMAT must be one of ${formats.join(', ')}, got "${value}"; unset it for pretty lines on a terminal and JSON (worker, gateway) or text (other commands) elsewhere`,
  badRedisUrl: (why: string) => `${why}. Pass --redis-url or set REDIS_URL, e.g. --redis-url redis://127.0.0.1:6379`,

  /** `defaults`: which of the two was not given (its default was compared). */
  hangBelowRun: (hangMs: number, runMs: number, defaults: { runDefault: boolean; hangDefault: boolean } = { runDefault: false, hangDefault: false }) =>
    `--hang-ms (${hangMs}${defaults.hangDefault ? ', the default' : ''}) must be above --run-ms (${runMs}${defaults.runDefault ? ', the default' : ''}): a slow rollout is judged (model) before it is presumed wedged (re-dispatch)` +
    (defaults.runDefault ? '; give a --run-ms below it too' : defaults.hangDefault ? '; give a --hang-ms above it too' : ''),
  /** `why` may end with a full stop (an allowlist error's fix): it is not doubled (fresh-user report: "…scope).; see"). */
  badWorkerOption: (why: string) => `${why.replace(/\.$/, '')}; see ${cliCommand()} worker --help`,
  containmentRefused: (why: string) => `worker not started: ${why}`,
} as const;
