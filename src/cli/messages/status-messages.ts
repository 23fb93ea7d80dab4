import { COORDINATOR_LEASE_MS } from '../../producer/index.js';
import { cliCommand, shellWord } from '../cli-command.js';
import type { QueuesUsed } from '../queues-used.js';
import { queuesUsedThere, resumeInto, unknownFileNote, queueFlag } from './message-parts.js';

/** Texts of `status`, and the refusals of a run id that names other tasks or inputs. */
export const STATUS_MSG = {
  statusQueue: (queue: string, prefix: string, address: string) => `Queue "${queue}" (prefix "${prefix}") at ${address}`,
  statusQueueUnused: (queue: string, prefix: string, used: QueuesUsed) =>
    `  nothing has used queue "${queue}" under prefix "${prefix}" yet (no job, run or worker): ${queuesUsedThere(used)}${used.queues.length > 0 ? '; pass --queue NAME' : ''}`,
  statusJobs: 'Jobs by state:',
  statusWaitingInFairShare: (prioritized: number) => (prioritized > 0 ? `  (${prioritized} in fair-share order)` : ''),
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
} as const;
