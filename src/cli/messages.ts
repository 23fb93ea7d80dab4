import { COORDINATOR_LEASE_MS, DEFAULT_MAX_SPEC_BYTES, LEASE_LOST_WAIT_MS, MAX_PRODUCER_BYTES } from '../producer/index.js';
import { DEFAULT_MEMORY_MB, MIN_MEMORY_MB } from '../spec/index.js';
import { CLI_NAME, cliCommand, shellWord } from './cli-command.js';
import type { QueuesUsed } from './queues-used.js';

/**
 * Every user-facing text of the `rollout-queue` command in one place (the habit of
 * lint-staged `lib/messages.js`): help, errors, progress, summaries. Errors name the option
 * or file:line, what was wrong, and the fix. Redis addresses are always passed in already
 * redacted (see `redactRedisUrl`); nothing here ever receives a password.
 */

/** Help texts of commands and options. */
export const HELP = {
  program: 'A durable Redis/BullMQ execution plane for ML rollouts: specs in, exactly one typed Result out per rollout.',
  envHelp: [
    '',
    'Environment:',
    '  REDIS_URL             redis://[user:password@]host:port[/db] or rediss://… (default: redis://127.0.0.1:6379); --redis-url wins over it',
    '  ROLLOUT_QUEUE_PREFIX  key prefix of every queue (default: rq); --prefix wins over it',
    '  LOG_LEVEL             pino log level (default: info for worker and gateway, warn for the others)',
    '  LOG_FORMAT            pretty, json or text (default: pretty on a terminal, else json for worker and gateway, text for the others)',
    '',
    'Exit codes: 0 every spec got a result, 3 stopped on a caller result, 2 usage error, 130 interrupted, 1 anything else.',
  ].join('\n'),
  queue: 'queue name',
  redisUrl: 'Redis to use, redis://[user:password@]host:port[/db] or rediss://… (a password here shows in `ps`: prefer REDIS_URL for one)',
  prefix: 'key prefix of every queue; coordinators and workers must agree',
  allowEviction: 'start even though Redis maxmemory-policy may evict keys (anything but noeviction); results can be lost',
  worker: {
    description: 'Run a worker: take rollouts from a queue and run each in a child process.',
    concurrency: 'rollout slots: rollouts run at once, sharing the --children child processes (at most 1000)',
    children: 'shared child processes that host the slots, per sandbox.memoryMb',
    blockedLoopMs: 'kill a shared child whose event loop has not turned for this long with two rollouts or more in it, ms; they are handed back without spending their re-dispatch budget',
    allow: 'module patterns Refs may import besides rollout-queue/*, e.g. "@acme/rollouts/*" (whoever can write to the queue can run any allowed code)',
    name: 'worker name shown in results and status',
    metricsPort: 'serve Prometheus GET /metrics and a liveness GET /healthz on this port (0 picks a free one)',
    metricsHost: 'address the metrics endpoint binds; 0.0.0.0 lets a Kubernetes probe or a Prometheus server on another host reach it',
    maxOutputBytes: 'largest output a run function may return, bytes of its JSON text (1024–536870912); a larger one ends model/OutputTooLarge',
    maxSpecBytes: 'largest job this worker runs, bytes of its JSON data (1024–536870912), whoever added it; a larger one ends caller/SpecTooLarge without running',
    lockDurationMs: 'BullMQ lockDuration: a worker that stops renewing its lock this long is presumed dead',
    stalledIntervalMs: 'BullMQ stalledInterval: how often lost leases are looked for',
    shutdownGraceMs: 'on SIGTERM, how long active rollouts may finish before they are handed back',
    containment:
      'how each program a spec runs (a hostile tenant, docs/security.md) is contained: auto (the strongest the host allows, every open boundary listed as containmentGaps), strict (refuse to start with any gap), namespace+cgroup or process-group (force a weaker level, for tests or trusted programs that need the host)',
    allowNetwork: 'grant the host network to the programs of specs that ask for it (sandbox.network "host"); without it such a spec ends caller/NetworkNotAllowed and every program has only its own loopback',
    expose: 'a host path (absolute, existing) the programs of specs see read-only at the same path, besides /usr, /etc and the interpreters (repeatable, e.g. --expose /opt/datasets)',
    placement: 'a label of this worker, KEY=VALUE (repeatable, e.g. --placement region=eu-west --placement gpu=h100): it also serves every placement whose labels it has',
    fingerprint: 'environment fingerprint, the label "fingerprint"',
    evalConcurrency: 'evaluations (class evaluation) run at once, in queues of their own, apart from --concurrency',
  },
  run: {
    description: 'Enqueue one rollout per task line, write one Result per line to --out, print a summary.',
    tasks: 'tasks, one JSON object per line (task.id names the lease, else the line number)',
    artifact: 'the artifact under test: a file (sent as a string) or a directory (all its files)',
    run: 'run factory as module:export, e.g. rollout-queue/runners:codeRunner',
    runConfig: 'JSON object passed to the run factory',
    reward: 'reward factory as module:export, e.g. rollout-queue/rewards:lastNumber',
    rewardConfig: 'JSON object passed to the reward factory',
    rewardFile: "with --reward rollout-queue/rewards:command: a judge's file, shipped in the reward's config.files under its base name (repeatable), e.g. --reward-file judge.py --reward-config '{\"command\": [\"python3\", \"judge.py\"]}'",
    runId: 'run id; the same id again re-attaches to that run',
    out: 'results file, JSONL',
    maxInFlight: "at most this many of the run's rollouts waiting or active at once",
    weight: "the run's share of the queue's workers relative to other runs on it (0.01–100; 2 gets twice the slots of a run of weight 1 while both have rollouts waiting; see docs/fair-share.md)",
    maxSpecBytes: `largest spec (artifact, task and options as JSON) a rollout may have, bytes (1024–${MAX_PRODUCER_BYTES}); a run with a bigger one is refused before anything is enqueued`,
    env: 'names of environment variables the worker passes to the rollout (names only, never values)',
    runMs: "the rollout's own time limit for run and reward together, ms; past it: a model result, RunTimeout or RewardTimeout",
    rewardMs: "the reward's own limit, ms, inside what is left of --run-ms; past it: a model result, RewardTimeout",
    hangMs: "the plane's limit, ms, above --run-ms; past it the child is killed and the lease re-dispatched",
    memoryMb: `memory limit of each rollout, MiB (${MIN_MEMORY_MB}–65536): its child process' heap, and a codeRunner artifact's whole process tree`,
    cpus: 'CPU time of each program a rollout runs (a codeRunner artifact), in CPUs (0.01–1024): sandbox.cpus, a cgroup quota',
    diskMb: "what each program a rollout runs may write to its work dir, /tmp and /dev/shm together, MiB (1–65536): sandbox.diskMb; over it the program's writes fail and a failing program ends model/DiskLimit",
    network: 'none: each program a rollout runs has only its own loopback; host: the worker network (sandbox.network), granted only by workers started with --allow-network (others end the rollout caller/NetworkNotAllowed)',
    retain: 'how long the run stays in Redis once every result is delivered, e.g. 3d, 12h, 30m; 0 removes it at once',
    metricsPort: 'serve the coordinator\'s Prometheus metrics (in flight, delivered, duplicates) on this port while the run lasts (0 picks a free one)',
    metricsHost: 'address the coordinator metrics endpoint binds',
    placement: 'a label a worker must have to run the tasks, KEY=VALUE (repeatable); a task line\'s own "placement" object wins',
    fingerprint: 'run only on workers with this environment fingerprint (spec sandbox.fingerprint); the others never take it',
    class: 'evaluation: its own queues, worker --eval-concurrency, cached by content',
    costCeilingUsd: 'stop dispatching new leases once the cost receipts of delivered results reach this many US dollars (running ones finish)',
    goldKey: "a task key only the reward may see (its gold), besides the --reward's own goldKey; repeatable. The worker removes these keys from the task the run (and a codeRunner program's stdin) receives; the reward gets the whole task",
    goldVisibleToRun: 'hand the run the whole task, gold included (without it the gold keys are removed); only for a trusted run function that needs them, never a model-written program. Each Result records goldVisibleToRun: true',
  },
  resume: {
    description: 'Re-attach to a run and write the results not yet delivered (after the coordinator died).',
    out: 'results file; leases already in it are not written again',
    metricsPort: 'serve the coordinator\'s Prometheus metrics on this port while the run lasts (0 picks a free one)',
    metricsHost: 'address the coordinator metrics endpoint binds',
  },
  purge: {
    description: 'Remove a finished (completed, stopped or cancelled) run from Redis now: its jobs, records and artifact.',
    olderThan: 'instead of one run id: purge every finished run that ended at least this long ago, e.g. 7d, 12h',
    discardUndelivered: 'also purge runs whose finished Results were never delivered (refused without it: resume collects them)',
  },
  status: {
    description: 'Show jobs by state, connected workers and, for a run, results by kind, counters and quarantined leases.',
    json: 'print JSON',
  },
  cancel: { description: "Cancel a run: remove its waiting rollouts and tell workers to stop its active ones." },
  dashboard: {
    description: 'Serve the bull-board dashboard over the queues (read-only unless --writable).',
    port: 'port to listen on (0 picks a free one)',
    host: 'address to listen on; any but loopback needs ROLLOUT_QUEUE_DASHBOARD_TOKEN or ROLLOUT_QUEUE_DASHBOARD_USER + _PASSWORD',
    queue: 'a queue to show; repeat for more',
    writable: 'allow retry/remove/clean/pause from the dashboard',
  },
  gateway: {
    description: 'Serve the harness POST /dispatch wire and a runs API over HTTP, on top of the durable queue.',
    port: 'port to listen on (0 picks a free one)',
    host: 'address to listen on (without auth only loopback is allowed)',
    dispatch: 'the Dispatch workers run for POST /dispatch, as module:export (e.g. @acme/evals:solve); workers must --allow its module. Without it the gateway serves the runs API only',
    dispatchConfig: 'JSON object passed to the Dispatch factory',
    authTokenEnv: 'name of the environment variable holding the bearer token every request must send (at least 16 characters)',
    noAuth: 'serve without a token (loopback host only)',
    maxBodyBytes: 'largest request body, bytes; larger ones get 413',
    goldKey: "a key of each POST /dispatch scenario the Dispatch must not see (its gold, scored on the coordinator); repeatable. Workers remove it from the scenario before calling the Dispatch",
    env: 'name of a secret each dispatch gets as ctx.secrets and in its process.env, read by the workers from their own environment (names only, never values); repeat for more',
    runMs: 'time limit of each dispatch on the worker, ms; past it the Dispatch is aborted and answered 500 RunTimeout',
    graceMs: 'on SIGTERM, how long requests in flight get to be answered before the rest get 503 GatewayClosing, ms',
    keepAnswerMs: 'how long a dispatch answer is kept for a client\'s retry, and how long a dispatch run may go without a client before the gateway finishes it (at least 5 s), ms',
  },
  demo: {
    description: 'Run examples/arithmetic end to end: Redis, worker processes, dashboard, a run with a summary.',
    workers: 'worker processes to start',
    tasks: 'tasks to run from examples/arithmetic/tasks.jsonl (at most as many as it holds)',
    concurrency: 'rollouts at once per worker',
    port: "the dashboard's port on 127.0.0.1 (0: a free one)",
    keep: "keep Redis, workers and dashboard up after the run until Ctrl-C (the dashboard's completed tab empties once the run completes: its Results are in the results file)",
    out: 'results file',
  },
} as const;

/** The `Examples:` section of each command's `--help` (option-help.ts adds it), as a user would type them. */
export const EXAMPLES = {
  worker: [
    `${CLI_NAME} worker`,
    `${CLI_NAME} worker --queue evals --concurrency 8 --allow '@acme/rollouts/*'`,
    `${CLI_NAME} worker --redis-url redis://redis.internal:6379 --placement gpu=h100 --metrics-port 9464`,
  ],
  run: [
    `${CLI_NAME} run --tasks tasks.jsonl --artifact solve.py --run rollout-queue/runners:codeRunner --reward rollout-queue/rewards:lastNumber`,
    `${CLI_NAME} run --tasks tasks.jsonl --artifact app/ --run rollout-queue/runners:codeRunner --run-config '{"entrypoint": "main.py"}' \\`,
    `    --reward rollout-queue/rewards:exactMatch --reward-config '{"goldKey": "expected"}' --run-id eval-1 --out eval-1.jsonl`,
    `${CLI_NAME} run … --run-id eval-1     (the same command again re-attaches to run eval-1)`,
  ],
  resume: [`${CLI_NAME} resume eval-1`, `${CLI_NAME} resume eval-1 --queue evals --out eval-1.jsonl`],
  status: [`${CLI_NAME} status`, `${CLI_NAME} status eval-1`, `${CLI_NAME} status eval-1 --queue evals --json`],
  cancel: [`${CLI_NAME} cancel eval-1`, `${CLI_NAME} cancel eval-1 --queue evals`],
  purge: [`${CLI_NAME} purge eval-1`, `${CLI_NAME} purge --older-than 7d`, `${CLI_NAME} purge eval-1 --discard-undelivered`],
  dashboard: [`${CLI_NAME} dashboard`, `${CLI_NAME} dashboard --port 8080 --queue rollouts --queue evals`, `ROLLOUT_QUEUE_DASHBOARD_TOKEN=… ${CLI_NAME} dashboard --host 0.0.0.0`],
  gateway: [
    `${CLI_NAME} gateway --port 8080 --no-auth`,
    `GATEWAY_TOKEN=$(openssl rand -hex 32) ${CLI_NAME} gateway --port 8080 --host 0.0.0.0 --auth-token-env GATEWAY_TOKEN --dispatch @acme/evals:solve`,
  ],
  demo: [`${CLI_NAME} demo`, `${CLI_NAME} demo --workers 4 --tasks 40 --keep`],
} as const;

/** Prefixes named at most in {@link queuesUsedThere}. */
const MAX_PREFIXES_NAMED = 5;

/** Where queues were used, for the lines about a queue nothing used: under its prefix, else under others. */
function queuesUsedThere(used: QueuesUsed): string {
  if (used.queues.length > 0) return `queues used there: ${used.queues.join(', ')}`;
  if (used.elsewhere.size === 0) return 'no queue there was used yet';
  const named = [...used.elsewhere].slice(0, MAX_PREFIXES_NAMED).map(([prefix, queues]) => `"${prefix}" (${queues.join(', ')})`);
  const more = used.elsewhere.size > MAX_PREFIXES_NAMED ? `, and ${used.elsewhere.size - MAX_PREFIXES_NAMED} more` : '';
  return `no queue there was used yet; prefixes used in this Redis: ${named.join(', ')}${more}; set ROLLOUT_QUEUE_PREFIX to one of them`;
}

/** Short type name of a value for error messages ("array", "null", "string"). */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** The `resume` command that collects a run into `out`, its results file (`FILE` when unknown: see {@link unknownFileNote}). */
function resumeInto(runId: string, queue: string, out: string | undefined): string {
  return `${cliCommand()} resume ${runId}${queueFlag(queue)} --out ${out === undefined ? 'FILE' : shellWord(out)}`;
}

/** What FILE of {@link resumeInto} is when the run's coordinator named no results file (a run of the library). */
function unknownFileNote(runId: string, out: string | undefined): string {
  return out === undefined
    ? `\n  where FILE is the results file its run command wrote (--out; results-${runId}.jsonl in its directory without one), so its Results stay in one file;` +
        ` a run of the library recorded no file: its program collects the rest with queue.attach("${runId}")`
    : '';
}

/** ` --queue <q>` when `queue` is not the default one, else empty (for commands users copy). */
function queueFlag(queue: string | undefined): string {
  return queue && queue !== 'rollouts' ? ` --queue ${queue}` : '';
}

/** One `label  value` row of the summary, labels in one column. */
function summaryRow(label: string, value: string): string {
  return `  ${label.padEnd(20)}${value}`;
}

/** Error and status texts. */
export const MSG = {
  // ── options ──────────────────────────────────────────────────────────────
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
    return `--run-config: codeRunner needs the file of the --artifact directory to run, in "entrypoint": pass --run-config '${JSON.stringify({ entrypoint: likely })}' (its files: ${files.slice(0, 10).map((f) => JSON.stringify(f)).join(', ') || 'none'}${files.length > 10 ? ', …' : ''})`;
  },
  entrypointNotInArtifact: (entrypoint: string, files: readonly string[]) =>
    `--run-config: codeRunner's entrypoint ${JSON.stringify(entrypoint)} is not a file of --artifact (its files: ${files.slice(0, 10).map((f) => JSON.stringify(f)).join(', ') || 'none'}${files.length > 10 ? ', …' : ''}); name one of them in "entrypoint"`,
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

  // ── input files ──────────────────────────────────────────────────────────
  /** Several bad lines of a tasks file (`shown`: the first ones' own messages, each `file:line: …`), reported at once. */
  taskLinesRefused: (file: string, count: number, shown: readonly string[]) =>
    `--tasks ${file} has ${count} bad lines; nothing was enqueued. Fix them all, then run again:\n` +
    shown.map((message) => `  ${message.replace(/ Nothing was enqueued\.$/, '')}`).join('\n') +
    (count > shown.length ? `\n  … and ${count - shown.length} more bad line(s) (the first ${shown.length} are shown)` : ''),
  tasksUnreadable: (file: string, why: string) => `cannot read --tasks ${file}: ${why}`,
  tasksEmpty: (file: string) => `--tasks ${file} holds no tasks (it is empty or only blank lines); write one JSON object per line, e.g. {"id": "t1", "answer": 42}. Nothing was enqueued.`,
  taskNotJson: (file: string, line: number, why: string) => `${file}:${line}: not valid JSON (${why}); each line must be one JSON object. Nothing was enqueued.`,
  taskNotUtf8: (file: string, line: number, column: number, byte: number) =>
    `${file}:${line}: not UTF-8 text (byte ${column} of the line, 0x${byte.toString(16).padStart(2, '0')}, begins no valid UTF-8 sequence); save the file as UTF-8. Nothing was enqueued.`,
  taskNotObject: (file: string, line: number, got: string) => `${file}:${line}: expected a JSON object, got ${got}. Nothing was enqueued.`,
  taskInvalid: (file: string, line: number, why: string) => `${file}:${line}: ${why}. Nothing was enqueued.`,
  taskTooBig: (file: string, line: number, bytes: number, limit: number) =>
    `${file}:${line}: the task is ${bytes} bytes as JSON, over the ${limit}-byte task limit; keep large inputs out of the task (put them where the worker can read them and pass their path or key). Nothing was enqueued.`,
  taskMetaInvalid: (file: string, line: number, why: string) =>
    `${file}:${line}: "$meta" (the line's own tag, returned on its Result as meta, never part of the task): ${why}. Nothing was enqueued.`,
  taskEmptyId: (file: string, line: number) =>
    `${file}:${line}: task.id is empty; give it a non-empty id or remove it to use the line number. Nothing was enqueued.`,
  /**
   * Two lines share a lease key. A task without an id is keyed by its line number, so either
   * side may be a line number rather than an id: the message says which, and what to change.
   */
  taskDuplicate: (file: string, line: number, key: string, first: { line: number; byId: boolean }, byId: boolean) =>
    `${file}:${line}: ${
      byId
        ? first.byId
          ? `task id "${key}" repeats line ${first.line}`
          : `task id "${key}" is the key of line ${first.line}, a task without an id (it is named by its line number)`
        : `this task has no id, so it is named by its line number "${key}", which line ${first.line} already uses as its task id`
    }; task ids name leases and must be unique within a run: give ${byId && first.byId ? 'one of them another id' : 'the task without an id an id of its own'}. Nothing was enqueued.`,
  /**
   * A task line lacks the gold answer a built-in reward reads (`reward`: its `$ref`). `keys`: the
   * task's keys as listed; `suggestion`: one of them close to `goldKey`; `fixConfig`: the
   * --reward-config JSON with `goldKey` set to the suggestion (or `KEY`); `lacking` of `total`
   * tasks have no gold answer: when only some do, only adding the field fixes it.
   */
  taskNoGold: (
    file: string,
    line: number,
    gold: { reward: string; goldKey: string; isNull: boolean; keys: string; suggestion: string | undefined; fixConfig: string; lacking: number; total: number },
  ) => {
    const { reward, goldKey, suggestion, lacking, total } = gold;
    const key = JSON.stringify(goldKey);
    const where = lacking === total ? 'every task' : lacking === 1 ? 'this task' : `the ${lacking} tasks that lack it`;
    // A null is there already: it needs a value, not adding (fresh-user report, helper-33).
    const addIt = gold.isNull ? `give ${key} a string, number or boolean in ${where}` : `add ${key} to ${where}`;
    // Another goldKey fixes only tasks that all lack this one: where some hold it, a near key in
    // this task is the task's own misspelling (fresh-user report, helper-33: the suggested
    // --reward-config would have broken every other line).
    const fix =
      suggestion !== undefined && lacking === total
        ? `did you mean ${JSON.stringify(suggestion)}? pass --reward-config ${shellWord(gold.fixConfig)}, or ${addIt}`
        : suggestion !== undefined
          ? `rename ${JSON.stringify(suggestion)} to ${key} in this task, or ${addIt}`
          : lacking === total && !gold.isNull
            ? `add ${key} to every task, or pass --reward-config ${shellWord(gold.fixConfig)} with the key that holds the answer`
            : addIt;
    const count = total === 1 ? '' : lacking === total ? `; all ${total} tasks lack it` : `; ${lacking} of ${total} tasks lack it`;
    return (
      `${file}:${line}: --reward ${reward} reads the gold answer at task.${goldKey}, and ${gold.isNull ? `this task's ${key} is null` : `this task has no ${key}`} ` +
      `(task keys: ${gold.keys}${count}); ${fix}. Nothing was enqueued.`
    );
  },
  /** A task line's gold answer is an object or array (`got`, e.g. `an array of 2`); `reward` as in taskNoGold. */
  taskGoldNotScalar: (file: string, line: number, reward: string, goldKey: string, got: string) =>
    `${file}:${line}: --reward ${reward} reads the gold answer at task.${goldKey}, which holds ${got}; it must be a string, number or boolean: put the answer there as text. Nothing was enqueued.`,
  taskGoldNotNumber: (file: string, line: number, reward: string, goldKey: string, got: string) =>
    `${file}:${line}: --reward ${reward} compares numbers, and task.${goldKey} is ${got}; put a number there (or a numeric string like "1,234"), or use --reward rollout-queue/rewards:exactMatch or :contains for text answers. Nothing was enqueued.`,
  artifactMissing: (file: string, why: string) => `cannot read --artifact ${file}: ${why}`,
  artifactBinary: (file: string) =>
    `--artifact: ${file} is not valid UTF-8 text; binary files are not supported in rendered.files. Put binary data where the worker can read it, or base64 it and decode it in the artifact`,
  artifactSymlink: (link: string) =>
    `--artifact: ${link} is a symbolic link; links are not sent with an artifact. Replace it with a copy of its target, or remove it`,
  artifactEmpty: (dir: string) => `--artifact ${dir} is a directory without files (node_modules and .git are skipped)`,
  /** A spec over `--max-spec-bytes`: `by` is what makes it big (the artifact, or a task line as `file:line`). */
  specTooBig: (by: string, bytes: number, limit: number, max: number) =>
    `${by}: the largest rollout spec (the artifact, the task and the options, as JSON) would be ${bytes} bytes, over --max-spec-bytes ${limit}${limit === DEFAULT_MAX_SPEC_BYTES ? ' (the default)' : ''}; ${
      bytes <= max ? `pass --max-spec-bytes ${bytes} or more (at most ${max}), ` : `the most --max-spec-bytes allows is ${max}, so `
    }or keep large data out of the artifact (put it where the worker can read it and pass its path or key). Nothing was enqueued.`,
  demoTooFewTasks: (count: number, held: number, file: string) =>
    `--tasks ${count}: ${file} holds ${held} task(s); pass --tasks ${held} or fewer (or add tasks to the file)`,
  exampleMissing: (file: string) => `${file} is missing; the demo runs from a clone of rollout-queue (examples/ is not in the npm package)`,
  exampleInvalid: (file: string, why: string) => `${file}: ${why}`,

  // ── results file ─────────────────────────────────────────────────────────
  resultsCorrupt: (file: string, line: number) => `${file}:${line} is not a result line; move the file away or pass another --out`,
  resultsOtherRun: (file: string, found: string, runId: string) =>
    `${file} holds results of run "${found}", not "${runId}"; pass another --out`,
  outIsDirectory: (file: string) => `--out ${file} is a directory; pass a file path instead, e.g. --out ${file.replace(/\/+$/, '')}/results.jsonl`,
  outNotRegular: (file: string, kind: string) =>
    `--out ${file} is a ${kind}, not a regular file; results must go to a file that can be re-opened on resume: pass a file path, e.g. --out results.jsonl`,
  outUnderFile: (file: string, parent: string) =>
    `--out ${file}: ${parent} is a file, not a directory; pass a path inside a directory, e.g. --out results.jsonl`,
  outNotWritable: (file: string, why: string) =>
    `--out ${file} cannot be opened for appending (${why}); pass a path in a directory you can write to, e.g. --out results.jsonl`,
  resultsWriteFailed: (file: string, why: string, runId: string, queue: string) =>
    `writing a result to ${file} failed (${why}); stopped, the result stays in Redis. Free space or fix the file, then collect the rest with: ${cliCommand()} resume ${runId}${queueFlag(queue)} --out ${file}`,
  resultsOfGoneRun: (file: string, runId: string, count: number) =>
    `warning: Redis has no run ${runId}, though ${file} holds ${count} of its Results (purged, past its retention, or lost in a Redis restart): ` +
    `every task runs again, and the Results already in the file are kept as they are, made from whatever tasks and inputs the run had then. ` +
    `If the tasks or inputs changed, stop (Ctrl-C) and use a new --run-id or another --out`,
  resultsAllInFileOfGoneRun: (file: string, runId: string, tasks: number) =>
    `Redis has no run ${runId} any more (purged, past its retention, or lost in a Redis restart), and ${file} holds a Result for every one of its ${tasks} task(s): ` +
    `nothing runs again. To run the tasks again, pass a new --run-id (or leave it out)`,
  resultsReopened: (file: string, count: number, dropped: boolean) =>
    `${file} already holds ${count} result(s)${dropped ? ' (a partial last line was dropped)' : ''}; they are kept and not written again`,

  // ── Redis ────────────────────────────────────────────────────────────────
  redisUnreachable: (address: string, why: string) =>
    `could not connect to Redis at ${address} (${why}). Start Redis (redis-server, or docker compose up redis) or point REDIS_URL at one.`,
  redisTlsFailed: (address: string, why: string) =>
    `could not open a TLS connection to Redis at ${address} (${why}): rediss:// needs a Redis with TLS on (its tls-port); for a plain Redis use redis://.`,
  redisHostUnknown: (address: string, host: string, code: string) =>
    `could not connect to Redis at ${address}: the host name "${host}" does not resolve (${code}). Check the host in REDIS_URL (redis://host:port), e.g. redis://127.0.0.1:6379.`,
  /** `placeholder`: the password given is `***`, as the CLI prints a password (a hint pasted as printed). */
  redisAuthFailed: (address: string, placeholder = false) =>
    `Redis at ${address} refused the credentials (WRONGPASS). ${placeholder
      ? 'The password in REDIS_URL is ***, which this CLI prints in place of a password: put the real one there (redis://user:password@host:port).'
      : 'Check the user and password in REDIS_URL (redis://user:password@host:port).'}`,
  redisNeedsAuth: (address: string) =>
    `Redis at ${address} requires a password (NOAUTH). Put it in REDIS_URL: redis://[user]:password@host:port.`,
  redisNoPasswordSet: (address: string) =>
    `Redis at ${address} has no password set, but REDIS_URL gives one. Remove it from REDIS_URL or set requirepass on the server.`,
  redisUrlBlank: (fallback: string) => `warning: REDIS_URL is set but empty: using ${fallback}; unset it to mean that, or set the address you meant`,
  redisOther: (address: string, why: string) => `Redis at ${address} answered with an error: ${why}`,
  redisRefusesWrites: (address: string, code: string, why: string) =>
    `Redis at ${address} refuses writes (${code}): ${why}. ${code === 'OOM' || code === 'EXECABORT' ? `It is at maxmemory: free memory (\`${cliCommand()} purge --older-than 1d\` removes the runs that ended a day ago or earlier, \`purge RUN_ID\` one finished run) or raise maxmemory (CONFIG SET maxmemory …).` : 'Point REDIS_URL at a writable primary.'}`,
  redisRetrying: (problem: string, retryMs: number) => `${problem} Retrying in ${Math.round(retryMs / 1000)} s.`,

  // ── runs ─────────────────────────────────────────────────────────────────
  runIdGenerated: (runId: string) => `run id: ${runId} (run the same command with --run-id ${runId} to re-attach)`,
  runStarting: (runId: string, count: number, queue: string, address: string) =>
    `run ${runId}: ${count} rollout(s) on queue "${queue}" at ${address}`,
  runDeliveredElsewhere: (runId: string, delivered: number, file: string | null, out: string) =>
    `run ${runId} is completed and all ${delivered} of its Results were delivered${file ? `, to ${file}` : ''} (a run's Results are delivered once): there is nothing to collect into ${out}, and nothing was written there. ${file ? 'Read that file' : 'Read the results file of the run that delivered them'}, or run the tasks again under a new --run-id.`,
  /** `command`: what the user ran, `run` (the same tasks) or `resume`. */
  runResultsElsewhere: (runId: string, queue: string, file: string, held: number, out: string, command: 'run' | 'resume') =>
    `run ${runId} delivers its Results to ${file}, which holds ${held} of them: collecting the rest into ${out} would split the run across two files, so nothing was written there. ` +
    `Collect into that file: ${command === 'run' ? `run the same command with --out ${shellWord(file)}` : `\`${resumeInto(runId, queue, file)}\``}. ` +
    'To collect into another file anyway, move that one away first (the Results in it are not delivered again).',
  runResuming: (runId: string, queue: string, address: string) => `re-attaching to run ${runId} on queue "${queue}" at ${address}`,
  resumeRunGone: (runId: string, queue: string, out: string, held: number) =>
    `no run "${runId}" on queue "${queue}" any more, though ${out} holds ${held} of its Results: Redis no longer has it (purged, past its retention, or lost when Redis restarted without persistence). ` +
    `To finish it, run the same \`${cliCommand()} run …\` command again with --run-id ${runId} --out ${shellWord(out)}: it runs the tasks again and writes only the Results the file lacks.`,
  /**
   * `elsewhere`: the prefix's other queues that hold a run of this id. `lost`: a sentence added
   * when the queue was used and holds no such run (resume: what to do if Redis lost it).
   */
  runNotFound: (runId: string, queue: string, prefix: string, unused?: QueuesUsed, elsewhere: readonly string[] = [], lost?: string) =>
    `no run "${runId}" on queue "${queue}" (prefix "${prefix}"); ${elsewhere.length > 0
      ? `it is on queue ${elsewhere.map((name) => `"${name}"`).join(', ')}: add --queue ${shellWord(elsewhere[0] as string)}`
      : unused
        ? `nothing has used queue "${queue}" under prefix "${prefix}" (${queuesUsedThere(unused)}); check --queue and ROLLOUT_QUEUE_PREFIX`
        : `check the id, --queue and ROLLOUT_QUEUE_PREFIX (${cliCommand()} status${queueFlag(queue)} lists the runs)${lost ? `. ${lost}` : ''}`}`,
  /**
   * Resume of a run Redis does not have, with no results file of it at hand (fresh-user report,
   * helper-30: after Redis restarted empty, resume said only "check the id", while running the
   * same run command again finished the run).
   */
  resumeRunLost: (runId: string, queue: string) =>
    `If Redis lost it (restarted without persistence, or flushed), run the same \`${cliCommand()} run …\` command again with --run-id ${runId}${queueFlag(queue)} and the --out it wrote to: it keeps the Results in that file and runs the rest`,
  runStopped: (leaseId: string, type: string, message: string) =>
    `run stopped on a caller result for lease ${leaseId}: ${type}: ${message}\nFix the caller contract (Ref, config, spec) and run again with a new --run-id; rollouts of this run that had not started were removed and get no Result.`,
  runStoppedEarlier: (why: string) => `the run was stopped before: ${why}`,
  // Every hint to paste names --queue (and resume its --out): fresh-user report, `status r9`
  // pasted from the "incomplete" line looked on queue "rollouts" and found no run.
  runIncomplete: (runId: string, count: number, total: number, file: string, queue: string) =>
    `run ${runId} ended with ${count} of ${total} results in ${file}; nothing more will come. The rest were delivered earlier, ` +
    `to another results file (a run's results are delivered once), or are missing: ${cliCommand()} status ${runId}${queueFlag(queue)} shows the run record.`,
  resumeNeedsSpecs: (runId: string, why: string, queue: string, out: string) =>
    `run ${runId}: ${/(\d+) specs were never enqueued/.exec(why)?.[1] ?? 'some'} of its specs were never enqueued (its coordinator stopped while enqueuing them), ` +
    `so resume collected only what was enqueued.\nTo finish run ${runId}, run the same \`${cliCommand()} run\` command again with --run-id ${runId}${queueFlag(queue)} --out ${shellWord(out)}: it enqueues only what is missing.`,
  /** Redis refused a write mid-run (`refusal`: the one line of refusalLine): it finishes once Redis has room again. */
  runRefused: (runId: string, refusal: string, queue: string, out: string) =>
    `${refusal}\nrun ${runId} stopped there; nothing delivered is lost: once Redis takes writes again, ${resumeInto(runId, queue, out)} (or the same run command with --run-id ${runId}) picks it up again.`,
  runFailed: (runId: string, why: string, queue: string, out: string) =>
    `run ${runId} could not be followed to its end: ${why}\nNothing delivered is lost: ${resumeInto(runId, queue, out)} (or the same run command with --run-id ${runId}) picks it up again.`,
  /** A second coordinator of a live run (RunBusyError); `out`: the results file the holder recorded, when it did. */
  coordinatorRefused: (runId: string, queue: string, command: 'run' | 'resume', holder: string, out: string | undefined) =>
    `run ${runId} is being delivered by another coordinator (${holder}), so this ${command} was refused and delivered no Result (one coordinator per run: no Result reaches two results files).\n` +
    `That coordinator writes the run's Results to ${out === undefined ? 'its own results file' : out}: let it finish (${cliCommand()} status ${runId}${queueFlag(queue)} shows the run), ` +
    `or stop it (Ctrl-C where it runs) and collect the rest with\n  ${resumeInto(runId, queue, out)}` +
    (out === undefined ? `\nwhere FILE is the results file of that coordinator (its --out), so the run's Results stay in one file` : ''),
  runWasCancelled: (runId: string, why: string) => (why.includes(runId) ? why : `run ${runId} was cancelled: ${why}`),
  /**
   * After a cancelled or stopped run's own end: Results not in `out` yet, of rollouts that had
   * finished but were not delivered or were still running (a cancel stops those; a stop on a
   * caller Result lets them finish). Fresh-user report: "of rollouts that were still running"
   * counted finished ones too (17 with 2 slots).
   */
  runningUndelivered: (runId: string, queue: string, count: number, out: string, how: 'cancelled' | 'stopped') =>
    `${count} Result(s) are not in ${out} yet, of rollouts that had finished but were not delivered, or were still running, when the run was ${how} (${how === 'cancelled' ? 'a rollout stopped by the cancel ends caller/Cancelled' : 'running ones run to their end'}); collect them with\n  ${cliCommand()} resume ${runId}${queueFlag(queue)} --out ${shellWord(out)}`,
  // Stored in the run record and shown by status: how it was cancelled, not a command to paste
  // (with the connection words of a hint it read `… cancel` without a run id: helper-33).
  cancelReason: `cancelled with \`${CLI_NAME} cancel\``,
  /**
   * `undelivered`: its finished Results not delivered yet (purge refuses it then: fresh-user
   * report, the hint said purge and purge refused). `out`: the run's results file when recorded.
   */
  runAlreadyEnded: (runId: string, status: string, queue: string, undelivered: number, out: string | undefined) =>
    undelivered > 0
      ? `run ${runId} is already ${status}: nothing to cancel. It has ${undelivered} finished Result(s) not delivered yet: ${MSG.purgeUndeliveredHint(runId, queue, out)}`
      : `run ${runId} is already ${status}: nothing to cancel (${cliCommand()} purge ${runId}${queueFlag(queue)} removes it from Redis)`,
  runInterrupted: (runId: string, out: string, queue: string, notEnqueued: number | undefined) =>
    (notEnqueued === undefined
      ? `interrupted: run ${runId} goes on in Redis. Collect the rest with\n  ${cliCommand()} resume ${runId}${queueFlag(queue)} --out ${out}\n` +
        `(if not every task was enqueued yet, run the same run command again with --run-id ${runId} instead: it enqueues only what is missing)`
      : notEnqueued > 0
        ? `interrupted before every task was enqueued (${notEnqueued} not yet): run ${runId} goes on in Redis. Finish it with the same run command again, with --run-id ${runId} --out ${out}: it enqueues only what is missing (resume would only collect what was enqueued)`
        : `interrupted: run ${runId} goes on in Redis. Collect the rest with\n  ${cliCommand()} resume ${runId}${queueFlag(queue)} --out ${out}`) +
    `\nor stop it with\n  ${cliCommand()} cancel ${runId}${queueFlag(queue)}`,
  runStopping: 'stopping: writing the results that have arrived (the run goes on in Redis); Ctrl-C again exits at once',
  runForcedOut: (runId: string, out: string, queue: string) =>
    `interrupted twice: exited at once, without a summary; ${out} holds the results written so far and run ${runId} goes on in Redis. Collect the rest with\n  ${cliCommand()} resume ${runId}${queueFlag(queue)} --out ${out}\n` +
    `(it first waits, up to ${LEASE_LOST_WAIT_MS / 1000} s, for this coordinator's lease to expire) or stop it with\n  ${cliCommand()} cancel ${runId}${queueFlag(queue)}`,
  /** `allowFlags`: the worker's `--allow` flags the run needs (`workerAllowFlags`), or ''. */
  noWorker: (queue: string, prefix: string, allowFlags = '') =>
    `no worker is serving queue "${queue}" (prefix "${prefix}") yet; start one with: ${cliCommand()} worker --queue ${queue}${allowFlags}`,
  purgeNeedsOne: `purge needs a run id or --older-than <duration> (not both): e.g. ${cliCommand()} purge RUN_ID, or ${cliCommand()} purge --older-than 7d`,
  runPurged: (runId: string, leases: number, undelivered: number) =>
    `purged run ${runId}: ${leases} lease(s), their jobs, records and stored artifact removed from Redis${undelivered > 0 ? ` (${undelivered} finished Result(s) never delivered were dropped, as --discard-undelivered asked)` : ''}`,
  purgedOlder: (count: number, age: string, ageMs: number) => (ageMs === 0 ? `purged ${count} ended run(s)` : `purged ${count} run(s) that ended ${age} ago or earlier`),
  purgeSkipped: (runId: string, why: string) => `  skipped ${runId}: ${why}`,
  purgeRunning: (runId: string, queue: string) =>
    `run ${runId} is still running: cancel it first with \`${cliCommand()} cancel ${runId}${queueFlag(queue)}\`, or let it complete; purge removes only runs that are completed, stopped or cancelled and have nothing running; nothing was removed`,
  purgeUndelivered: (runId: string, undelivered: number) => `run ${runId} has ${undelivered} Result(s) that finished but were never delivered; nothing was removed`,
  /** `out`: the run's results file (its coordinator's note), undefined when none was recorded. */
  purgeUndeliveredHint: (runId: string, queue: string, out: string | undefined) =>
    `collect them with \`${resumeInto(runId, queue, out)}\`${out === undefined ? ' (the run\'s results file)' : ''}, or drop them with \`${cliCommand()} purge ${runId}${queueFlag(queue)} --discard-undelivered\``,
  notADuration: (value: string) =>
    `"${value}" is not a duration: write a whole number with a unit, ms, s, m, h or d (e.g. 500ms, 90s, 30m, 12h, 3d)`,
  noWorkerStill: (queue: string, prefix: string, seconds: number, allowFlags = '') =>
    `still no worker serving queue "${queue}" (prefix "${prefix}") after ${seconds} s; leases no worker starts within timeouts.scheduleToStartMs (default 5 min) end as infrastructure / NoWorker. Start one with: ${cliCommand()} worker --queue ${queue}${allowFlags}`,
  /** `workers`: the workers listening on the queue's cancel channel, whether or not they run one of its rollouts. */
  runCancelled: (runId: string, removed: number, workers: number) =>
    `cancelled run ${runId}: ${removed} waiting rollout(s) removed; the ${workers} worker(s) serving the queue were told to stop any of its rollouts they are running`,
  /** A plain progress line (stderr off a terminal): `progress: 12/40 results (30%), 2.5/s, ETA 11s; ok 10, model 2, infra 0, caller 0`. */
  progressLine: (done: number, total: number | null, pace: { perSecond: number | null; etaSeconds: number | null }, kinds: Readonly<Record<string, number>>) =>
    `progress: ${total ? `${done}/${total} results (${Math.floor((done / total) * 100)}%)` : `${done} results`}, ${MSG.progressRate(pace.perSecond)}` +
    `${total ? `, ETA ${MSG.progressEta(pace.etaSeconds)}` : ''}; ${MSG.progressKinds(kinds, ', ')}`,
  /** cli-progress format of the terminal bar; `{rate}`, `{etaLeft}` and `{kinds}` are filled by progress.ts. */
  progressBarFormat: ' {bar} {percentage}% | {value}/{total} results | {rate} | ETA {etaLeft} | {kinds}',
  /** Results per second as `2.5/s`, `40/min` below one a second, `-/s` before the first. */
  progressRate: (perSecond: number | null) =>
    perSecond === null ? '-/s' : perSecond >= 1 ? `${perSecond >= 10 ? Math.round(perSecond) : perSecond.toFixed(1)}/s` : `${(perSecond * 60).toFixed(perSecond * 60 >= 10 ? 0 : 1)}/min`,
  /** Seconds left as `45s`, `12m 05s`, `2h 03m`, `-` when unknown. */
  progressEta: (seconds: number | null) => {
    if (seconds === null || !Number.isFinite(seconds)) return '-';
    const s = Math.round(seconds);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
    return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  },
  /** Counts by kind for progress, `ok 10 model 2 infra 0 caller 0` (infrastructure shortened to fit a terminal line). */
  progressKinds: (kinds: Readonly<Record<string, number>>, separator = ' ') =>
    (['ok', 'model', 'infrastructure', 'caller'] as const).map((kind) => `${kind === 'infrastructure' ? 'infra' : kind} ${kinds[kind] ?? 0}`).join(separator),

  // ── summary ──────────────────────────────────────────────────────────────
  summaryTitle: (runId: string, delivered: number, total: number | null, state: string) =>
    `Run ${runId}: ${delivered}${total === null ? '' : ` of ${total}`} result(s), ${state}`,
  summaryKind: (kind: string, count: number, extra: string) => summaryRow(kind, `${String(count).padStart(6)}${extra ? `   ${extra}` : ''}`),
  summaryRewards: (mean: string, spread: string) => `mean reward ${mean} over ok${spread ? ` (${spread})` : ''}`,
  /** `okMean` null: no Result is ok. A Result that is not ok counts 0 in the mean over all (summary.ts meanRewardOverAll). */
  summaryMeanReward: (allMean: string, total: number, okMean: string | null, ok: number) =>
    summaryRow('mean reward', `${allMean} over all ${total} (a Result that is not ok counts as 0)${okMean === null ? '; no ok Result' : `, ${okMean} over the ${ok} ok`}`),
  summaryRunMs: (p50: string, p95: string) => summaryRow('run time', `p50 ${p50}, p95 ${p95}`),
  summaryWorkers: (spread: string) => summaryRow('results per worker', spread),
  summaryCounter: (label: string, value: number | string) => summaryRow(label, String(value).padStart(6)),
  summaryCost: (cost: string) => summaryRow('cost', cost),
  costCeilingReached: (totalUsd: number, ceilingUsd: number) =>
    `cost ceiling reached: $${totalUsd.toFixed(4)} of $${ceilingUsd} (--cost-ceiling-usd / costCeilingUsd); no new leases are dispatched, waiting ones are removed, running ones finish`,
  summaryTruncated: (count: number, ok: number) =>
    summaryRow('truncated output', `${String(count).padStart(6)}${count > 0 ? `   ${ok} reward(s) computed on output cut at maxOutputBytes (head and tail kept)` : ''}`),
  summaryCached: (count: number) => summaryRow('from the eval cache', `${String(count).padStart(6)}   Result(s) of an earlier identical evaluation, not run again (their worker and run time are that run's)`),
  summaryFile: (file: string) => summaryRow('results file', file),

  // ── status / cancel ──────────────────────────────────────────────────────
  statusQueue: (queue: string, prefix: string, address: string) => `Queue "${queue}" (prefix "${prefix}") at ${address}`,
  statusQueueUnused: (queue: string, prefix: string, used: QueuesUsed) =>
    `  nothing has used queue "${queue}" under prefix "${prefix}" yet (no job, run or worker): ${queuesUsedThere(used)}${used.queues.length > 0 ? '; pass --queue NAME' : ''}`,
  statusJobs: 'Jobs by state:',
  statusWorkers: (count: number) => `Workers connected: ${count}`,
  /** `queue`: the queue shown; the command names it unless it is the default (fresh-user report: followed as printed, a worker served `rollouts`). */
  statusNoWorkers: (queue: string) => `  none: start one with \`${cliCommand()} worker${queueFlag(queue)}\``,
  statusPlacements: (count: number) => `Placement queues: ${count}`,
  /** The runs sharing the queue's workers (fair share, docs/fair-share.md). */
  statusShares: (count: number) => `Runs sharing the workers: ${count} (weight; rollouts waiting, active; share of active / fair share)`,
  statusShareLine: (runId: string, weight: number, waiting: number, active: number, activeShare: number, fairShare: number) =>
    `  ${runId.padEnd(24)} weight=${weight} waiting=${waiting} active=${active} share=${Math.round(activeShare * 100)}%/${Math.round(fairShare * 100)}%`,
  /** The hint names the labels' own `--placement` flags (fresh-user report: it said `KEY=VALUE …` while the labels were known). */
  statusPlacementLine: (labels: Readonly<Record<string, string>>, queue: string, leaseClass: string, waiting: number, active: number, workers: number) =>
    `  ${Object.entries(labels).map(([key, value]) => `${key}=${value}`).join(',') || '(no labels)'}${leaseClass === 'evaluation' ? ' [evaluation]' : ''}  waiting=${waiting} active=${active} workers=${workers < 0 ? '?' : workers}` +
    (workers === 0 && waiting > 0
      ? `  NO WORKER can take these leases: start \`${cliCommand()} worker${queueFlag(queue)}${Object.entries(labels).map(([key, value]) => ` --placement ${shellWord(`${key}=${value}`)}`).join('')}\` (they end NoWorker at timeouts.scheduleToStartMs)`
      : ''),
  statusKindsOfDelivered: '  of the delivered Results, by kind:',
  statusRun: (runId: string, status: string, created: string | null) => `Run ${runId}: ${status}${created ? ` (created ${created})` : ''}`,
  /** `out`: the results file the run's coordinator recorded; undefined when none was (a run of the library, an older CLI). */
  statusUndelivered: (runId: string, queue: string, out: string | undefined) =>
    `  no coordinator is delivering it (its run command was stopped): workers finish its rollouts and the Results wait in Redis; collect them with\n    ${resumeInto(runId, queue, out)}` +
    unknownFileNote(runId, out),
  /**
   * A running run no coordinator delivers whose run command stopped while enqueuing: `resume`
   * would collect the enqueued ones and then refuse (specs never enqueued), so the hint is the
   * run command, which enqueues the rest; `out` as in statusUndelivered.
   */
  statusPartlyEnqueued: (runId: string, enqueued: number, specCount: number, out: string | undefined) =>
    `  no coordinator is delivering it, and only ${enqueued} of its ${specCount} specs were enqueued (its run command stopped while enqueuing); ` +
    `run the same \`${cliCommand()} run …\` command again with --run-id ${runId} --out ${out === undefined ? 'FILE' : shellWord(out)}: it enqueues the rest and collects every Result ` +
    `(resume only collects what was enqueued)${unknownFileNote(runId, out)}`,
  statusCoordinatorGone: (pid: number) =>
    `  its coordinator (pid ${pid} on this host) is gone; its lease lapses within ${COORDINATOR_LEASE_MS / 1000} s (the command below waits for that):`,
  /** A cancelled or stopped run no coordinator delivers, with Results not delivered (rollouts finished or still running then); `out` as in statusUndelivered. */
  statusEndedUndelivered: (runId: string, queue: string, status: string, count: number, out: string | undefined) =>
    `  ${count} Result(s) are not delivered yet, of rollouts that had finished, or were still running, when it was ${status} (they wait in Redis, or come when those rollouts end); collect them with\n    ${resumeInto(runId, queue, out)}` +
    unknownFileNote(runId, out),
  statusRestored: (restoredAt: string) =>
    `  Redis lost this run's record mid-run (restarted without persistence, or flushed); its coordinator made it again at ${restoredAt} and added the lost jobs again: the counts below start there, the results file holds every Result`,
  statusStopReason: (reason: string) => `  stop reason     ${reason}`,
  statusRetention: (endedAt: string, expiresAt: string) => `  delivered       ${endedAt}; expires from Redis at ${expiresAt} (purge removes it now)`,
  runIdHoldsOtherTasks: (runId: string, queue: string, status: string, had: number, now: number) =>
    `run id ${runId} already names a ${status} run of ${had} spec(s) on queue ${queue}; this tasks file has ${now}. ` +
    `Running it again resumes a run with the same tasks: give new tasks a new --run-id (or leave it out)`,
  runIdHoldsOtherInputs: (runId: string, queue: string, status: string, differ: string) =>
    `run id ${runId} already names a ${status} run on queue ${queue} made from other inputs: ${differ === 'tasks' ? 'its tasks differ from this tasks file' : differ === 'inputs' ? 'its artifact, --run/--reward, their configs or the other spec options differ from these' : 'its tasks and its artifact, Refs or options differ from these'}. ` +
    `Running it again resumes a run with the same inputs: give changed inputs a new --run-id (or leave it out)`,
  taskPlacementNotObject: (file: string, line: number) =>
    `${file}:${line}: "placement" must be an object of labels like {"region": "eu-west"} (a worker takes the task only with each label equal); remove it to use --placement. Nothing was enqueued.`,
  optionRefusedBySpec: (option: string, field: string, reason: string) => `${option}: spec field "${field}": ${reason}`,
  taskRefusedBySpec: (file: string, line: number, field: string, reason: string) => `${file}:${line}: spec field "${field}": ${reason}`,
  rewardConfigRefused: (why: string) => `--reward-config: ${why}`,
  unknownBuiltinModule: (option: string, ref: string, module: string) =>
    `${option} ${ref}: rollout-queue has no such module for ${option}; its built-ins are in ${module} (e.g. ${module}:${module.endsWith('runners') ? 'codeRunner' : 'lastNumber'}), or name a module of your own`,
  noBuiltinFor: (option: string, ref: string, instead: string) => `${option} ${ref}: rollout-queue has no built-in for ${option}; name ${instead}`,
  unknownBuiltin: (option: string, ref: string, names: readonly string[]) =>
    `${option} ${ref}: the module has no such export; it exports ${names.join(', ')}`,
  statusRuns: (runs: readonly string[], total: number) =>
    total > runs.length ? `Runs (the newest ${runs.length} of ${total}; \`status --json\` lists all): ${runs.join(', ')}` : `Runs: ${runs.join(', ')}`,
  statusQuarantined: (count: number) => `Quarantined leases (ended by the re-dispatch limit): ${count}`,
  statusQuarantineLine: (leaseId: string, exitCode: string, signal: string, reason: string) =>
    `  ${leaseId}  exit code ${exitCode}, signal ${signal}${reason ? `: ${reason}` : ''}`,
  statusStderr: (tail: string) => `    stderr tail: ${tail}`,

  // ── worker ───────────────────────────────────────────────────────────────
  workerStopping: (graceMs: number | undefined) =>
    `stopping: no new rollouts; active ones may finish within ${graceMs === undefined ? 'the shutdown grace' : `${graceMs} ms`}; signal again to hand them back now`,
  coordinatorMetrics: (url: string) => `coordinator metrics: ${url}`,
  notAHost: (flag: string, value: string) => `${flag} ${JSON.stringify(value)} is not a listen address; pass an IP or host name such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`,
  metricsPortInUse: (port: number) =>
    `--metrics-port ${port} is already in use by another process; stop that process or pass another port, e.g. --metrics-port ${port + 1} (0 picks a free one)`,
  metricsPortDenied: (port: number, why: string) =>
    `--metrics-port ${port} cannot be used (${why}); ports below 1024 need privileges: pass one above 1024, e.g. --metrics-port 9464`,
  workerStoppingNow: 'stopping now: active rollouts are handed back to the queue',

  // ── dashboard ────────────────────────────────────────────────────────────
  dashboardUrl: (url: string) => `dashboard: ${url}`,
  dashboardFailed: (why: string) => `dashboard: ${why}`,
  dashboardPortInUse: (port: number) => `--port ${port} is already in use by another process; stop it or pass another port (0 picks a free one)`,
  dashboardQueues: (queues: readonly string[], readOnly: boolean) =>
    `showing queue(s) ${queues.join(', ')}${readOnly ? ' (read-only; --writable enables retry/remove/clean)' : ' (WRITABLE)'}`,
  dashboardStop: 'press Ctrl-C to stop',
  /** A command's warning about a queue nothing used (a misspelt --queue or prefix); `effect` says what that means for the command. */
  queueUnusedWarning: (queue: string, prefix: string, used: QueuesUsed, effect: string) =>
    `warning: nothing has used queue "${queue}" under prefix "${prefix}" yet (${queuesUsedThere(used)}); ${effect}: check --queue and ROLLOUT_QUEUE_PREFIX`,
  dashboardLogin: (how: 'token' | 'basic') =>
    how === 'token' ? 'login required: Authorization: Bearer <ROLLOUT_QUEUE_DASHBOARD_TOKEN> (a browser: any user name, the token as password)' : 'login required: basic auth with ROLLOUT_QUEUE_DASHBOARD_USER / ROLLOUT_QUEUE_DASHBOARD_PASSWORD',
  dashboardNeedsLogin: (host: string) =>
    `--host ${host} lets other machines reach the dashboard, which shows every job: set ROLLOUT_QUEUE_DASHBOARD_TOKEN (bearer token) or ROLLOUT_QUEUE_DASHBOARD_USER and ROLLOUT_QUEUE_DASHBOARD_PASSWORD (basic auth), or use --host 127.0.0.1`,
  dashboardHalfLogin: (missing: string) => `dashboard basic auth needs both ROLLOUT_QUEUE_DASHBOARD_USER and ROLLOUT_QUEUE_DASHBOARD_PASSWORD; set ${missing} too (or ROLLOUT_QUEUE_DASHBOARD_TOKEN instead)`,
  demoDashboardClosed: (url: string) => `dashboard ${url} closed with the demo; run it with --keep to keep the dashboard, the workers and Redis up until Ctrl-C`,
  /** `ownRedis`: the demo started its Redis (not one REDIS_URL names), so Ctrl-C stops it too. */
  // Retention takes a completed run's delivered jobs out of BullMQ's finished sets (docs/retention.md).
  demoDashboardKept: (url: string, ownRedis: boolean) =>
    `run finished; the dashboard stays up at ${url} (--keep), its queue's jobs and workers live; the completed tab lists only Results not yet delivered, so it is empty now that every Result is in the results file. Press Ctrl-C to stop it${ownRedis ? ', the workers and Redis' : ' and the workers'}`,

  // ── gateway ──────────────────────────────────────────────────────────────
  gatewayAuthMissing: 'the gateway needs auth: pass --auth-token-env NAME (the variable holding the bearer token), or --no-auth on a loopback --host',
  gatewayAuthBoth: 'pass either --auth-token-env or --no-auth, not both',
  gatewayNoAuthOffLoopback: (host: string) =>
    `--no-auth is refused with --host ${host}: without auth the gateway only listens on loopback (127.0.0.1, ::1); pass --auth-token-env NAME to listen on ${host}`,
  gatewayTokenUnset: (name: string) => `--auth-token-env ${name}: the environment variable ${name} is not set or empty; export it with the bearer token clients will send`,
  gatewayTokenShort: (name: string) => `--auth-token-env ${name}: the token is shorter than 16 characters; use a long random one, e.g. $(openssl rand -hex 32)`,
  gatewayPortInUse: (port: number) => `--port ${port} is already in use by another process; stop it or pass another port (0 picks a free one)`,
  gatewayFailed: (why: string) => `gateway: ${why}`,
  gatewayListening: (url: string, queue: string, dispatch: string | undefined, auth: boolean) =>
    `gateway: ${url} (queue "${queue}", ${dispatch !== undefined ? `dispatch ${dispatch}` : 'runs API only: no --dispatch'}, ${auth ? 'bearer token required' : 'NO AUTH, loopback only'}); press Ctrl-C to stop`,
  gatewayConfigWithoutDispatch: '--dispatch-config configures the Dispatch of --dispatch, which is not given; pass --dispatch module:export too, or drop --dispatch-config',

  // ── demo ─────────────────────────────────────────────────────────────────
  demoNoRedis: [
    'the demo needs Redis, and none was found:',
    '  - REDIS_URL is not set,',
    '  - there is no redis-server on PATH (install one: `sudo apt-get install redis-server` or `brew install redis`),',
    '  - no Docker engine answers (with Docker: `docker compose up -d redis`, then REDIS_URL=redis://127.0.0.1:6379).',
  ].join('\n'),
  demoRedis: (source: string, address: string) => `redis: ${address} (${source})`,
  demoContainerFailed: (why: string) => `could not start a Redis container through testcontainers: ${why}`,
  demoWorkers: (count: number, queue: string, logDir: string) => `workers: ${count} process(es) on queue "${queue}" (logs in ${logDir})`,
  demoWorkerExited: (name: string, how: string, log: string, tail: string) =>
    `worker ${name} exited early (${how}); its log is ${log}${tail ? `:\n${tail}` : ''}`,
  demoWorkersNotReady: (ready: number, wanted: number, seconds: number, logDir: string) =>
    `only ${ready} of ${wanted} worker(s) connected within ${seconds} s; see the logs in ${logDir}`,
  demoKeep: (ownRedis: boolean) => `everything stays up (--keep): press Ctrl-C to stop the workers${ownRedis ? ', the dashboard and Redis' : ' and the dashboard'}`,
  demoStopping: (parts: readonly string[]) => `stopping ${parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}` : parts[0]}…`,
  demoInterrupted: (out: string, ownRedis: boolean) =>
    `interrupted: the demo's run ends here and its other rollouts are not run (its workers${ownRedis ? ' and its Redis' : ''} stop with it); the Results so far are in ${out}`,
  demoQueueRemoved: (queue: string, address: string, ran: boolean) =>
    `removed the demo's queue "${queue}" (its jobs and run records) from Redis at ${address}${ran ? '; its Results are in the results file' : ''}`,
  demoQueueNotRemoved: (keyPrefix: string, address: string, why: string) =>
    `could not remove the demo's queue from Redis at ${address} (${why}); its keys are those named ${keyPrefix}:* (redis-cli --scan --pattern '${keyPrefix}:*' | xargs redis-cli unlink)`,
  localRedisFailed: (why: string) => `could not start redis-server: ${why}`,
} as const;
