import { cliEnvironment } from '../environment.js';
import { CliError, EXIT, UsageError, type ExitCode } from '../errors.js';
import { MSG } from '../messages.js';
import { coordinatorLogger, openQueue } from '../plane.js';
import { RunActiveError, RunNotFoundError, UndeliveredResultsError, type RolloutQueue } from '../../producer/index.js';
import { requireRedis } from '../redis-preflight.js';
import { runNotFound, unusedQueues } from '../queue-usage.js';
import type { PurgeCommandOptions } from '../commands/purge.js';

/**
 * `rollout-queue purge RUN_ID | --older-than D`: removes finished runs from Redis at once.
 * Exit 1 (nothing removed) when the run is still running, being delivered, or has active
 * rollouts, or does not exist; with --older-than, refused runs are listed and skipped.
 */
export async function purgeAction(runId: string | undefined, options: PurgeCommandOptions): Promise<ExitCode> {
  if ((runId === undefined) === (options.olderThan === undefined)) throw new UsageError(MSG.purgeNeedsOne);
  const env = cliEnvironment();
  await requireRedis(env);
  const queue = await openQueue(env, options.queue, coordinatorLogger('purge'), { writeQueueMeta: false });
  const purgeOptions = { discardUndelivered: options.discardUndelivered === true };
  try {
    if (runId !== undefined) {
      try {
        const outcome = await queue.purge(runId, purgeOptions);
        process.stdout.write(`${MSG.runPurged(runId, outcome.leases, outcome.undelivered)}\n`);
      } catch (err) {
        if (err instanceof RunNotFoundError) throw await runNotFound(env, options.queue, runId);
        if (!(err instanceof RunActiveError) && !(err instanceof UndeliveredResultsError)) throw err;
        throw new CliError(await refusal(queue, options.queue, err));
      }
      return EXIT.ok;
    }
    const outcome = await queue.purgeOlderThan(options.olderThan as number, purgeOptions);
    process.stdout.write(`${MSG.purgedOlder(outcome.purged.length, formatAge(options.olderThan as number), options.olderThan as number)}\n`);
    // Nothing to purge may be a misspelt --queue or prefix (fresh-user report: "purged 0 ended run(s)" and nothing more).
    if (outcome.purged.length === 0 && outcome.skipped.length === 0) {
      const [unused] = await unusedQueues(env, [options.queue]).catch(() => []);
      if (unused) process.stderr.write(`${MSG.queueUnusedWarning(options.queue, env.prefix, unused.used, 'nothing was purged')}\n`);
    }
    for (const { runId: id, error } of outcome.skipped) process.stdout.write(`${MSG.purgeSkipped(id, (await refusal(queue, options.queue, error)).replace(/\n/g, '\n    '))}\n`);
    return EXIT.ok;
  } finally {
    await queue.close();
  }
}

/**
 * A purge refusal in the CLI's words: the commands that collect, drop or cancel, as the user
 * pastes them (the library's message names its own API: fresh-user report, `purge --older-than`
 * printed "collect them first (attach, the CLI's resume)"). Other refusals keep their message.
 */
async function refusal(queue: RolloutQueue, queueName: string, err: RunActiveError | UndeliveredResultsError): Promise<string> {
  if (err instanceof UndeliveredResultsError) {
    const note = (await queue.status(err.runId).catch(() => undefined))?.run?.coordinatorNote ?? undefined;
    return `${MSG.purgeUndelivered(err.runId, err.undelivered)}\n${MSG.purgeUndeliveredHint(err.runId, queueName, note)}`;
  }
  return err.activity === 'running' ? MSG.purgeRunning(err.runId, queueName) : err.message;
}

function formatAge(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}
