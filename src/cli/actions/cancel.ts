import { cliEnvironment } from '../environment.js';
import { EXIT, type ExitCode } from '../errors.js';
import { MSG } from '../messages.js';
import { coordinatorLogger, openQueue, readStatus } from '../plane.js';
import { requireRedis } from '../redis-preflight.js';
import { runNotFound } from '../queue-usage.js';
import type { CancelCommandOptions } from '../commands/cancel.js';

/** `rollout-queue cancel RUN_ID`: remove the run's waiting rollouts and stop its active ones. */
export async function cancelAction(runId: string, options: CancelCommandOptions): Promise<ExitCode> {
  const env = cliEnvironment();
  await requireRedis(env);
  const queue = await openQueue(env, options.queue, coordinatorLogger('cancel'), { writeQueueMeta: false });
  try {
    const status = await readStatus(queue, runId);
    if (!status.run) throw await runNotFound(env, options.queue, runId);
    if (status.run.status === 'completed' || status.run.status === 'cancelled') {
      // Nothing is left to stop: saying "cancelled" would misreport a finished run.
      const undelivered = status.delivering ? 0 : (await queue.pendingResults(runId)).length;
      process.stdout.write(`${MSG.runAlreadyEnded(runId, status.run.status, options.queue, undelivered, status.run.coordinatorNote ?? undefined)}\n`);
      return EXIT.ok;
    }
    const outcome = await queue.cancel(runId, MSG.cancelReason);
    process.stdout.write(`${MSG.runCancelled(runId, outcome.removed.length, outcome.workersNotified)}\n`);
    return EXIT.ok;
  } finally {
    await queue.close();
  }
}
