import { LEASE_LOST_WAIT_MS } from '../../producer/index.js';
import { CLI_NAME, cliCommand, shellWord } from '../cli-command.js';
import type { QueuesUsed } from '../queues-used.js';
import { nameList, queuesUsedThere, resumeInto, queueFlag } from './message-parts.js';

/** Texts of a run's life: start, re-attach, stop, cancel, purge, interruptions, no worker. */
export const RUN_MSG = {
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
  /** `run --run-id` of a run that delivered some of its leases before (a re-attach): progress, not a warning. */
  runReattached: (runId: string, deliveredBefore: number, leases: number) =>
    deliveredBefore >= leases
      ? `re-attached to run ${runId}: all ${leases} already delivered, nothing left to collect`
      : `re-attached to run ${runId}: ${deliveredBefore} of ${leases} already delivered, collecting the other ${leases - deliveredBefore}`,
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
      ? `it is on queue ${nameList(elsewhere.map((name) => `"${name}"`))}: add --queue ${shellWord(elsewhere[0] as string)}`
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
      ? `run ${runId} is already ${status}: nothing to cancel. It has ${undelivered} finished Result(s) not delivered yet: ${RUN_MSG.purgeUndeliveredHint(runId, queue, out)}`
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
} as const;
