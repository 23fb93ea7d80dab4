import { Redis } from 'ioredis';
import { queueKeys } from '../../lease/index.js';
import { createRedisClient } from '../../platform/redis-connection.js';
import { cliEnvironment, type CliEnvironment } from '../environment.js';
import { CliError, EXIT, type ExitCode } from '../errors.js';
import { MSG } from '../messages.js';
import { coordinatorLogger, openQueue, readStatus } from '../plane.js';
import { requireRedis } from '../redis-preflight.js';
import { formatStatus, statusJson } from '../status-format.js';

/** Parsed options of `status`. */
export interface StatusOptions {
  queue: string;
  json?: boolean;
}

/**
 * `rollout-queue status [RUN_ID]`: jobs by state, connected workers, known runs; with a run id
 * also results by kind, counters and quarantined leases. Exit 1 when the run does not exist.
 */
export async function statusAction(runId: string | undefined, options: StatusOptions): Promise<ExitCode> {
  const env = cliEnvironment();
  await requireRedis(env);
  const queue = await openQueue(env, options.queue, coordinatorLogger('status'));
  try {
    const view = await readStatus(queue, runId);
    if (runId && !view.run) throw new CliError(MSG.runNotFound(runId, options.queue, env.prefix));
    const place = { queue: options.queue, prefix: env.prefix, address: env.address, runs: await knownRuns(env, options.queue) };
    process.stdout.write(`${options.json ? JSON.stringify(statusJson(view, place), null, 2) : formatStatus(view, place)}\n`);
    return EXIT.ok;
  } finally {
    await queue.close();
  }
}

/** Run ids recorded on the queue (the `runs` set of the key layout), sorted. */
async function knownRuns(env: CliEnvironment, queue: string): Promise<string[]> {
  const redis = createRedisClient(env.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return (await redis.smembers(queueKeys(env.prefix, queue).runs())).sort();
  } finally {
    redis.disconnect();
  }
}
