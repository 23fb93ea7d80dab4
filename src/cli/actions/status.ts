import { readFileSync } from 'node:fs';
import os from 'node:os';
import { queueKeys, RUN_FIELDS } from '../../lease/index.js';
import { createRedisClient } from '../../platform/redis-connection.js';
import { cliEnvironment, type CliEnvironment } from '../environment.js';
import { EXIT, type ExitCode } from '../errors.js';
import { coordinatorLogger, openQueue, readStatus, type StatusView } from '../plane.js';
import { requireRedis } from '../redis-preflight.js';
import { formatStatus, statusJson } from '../status-format.js';
import { queuesUsedInstead, runNotFound } from '../queue-usage.js';
import type { QueuesUsed } from '../queues-used.js';
import type { StatusCommandOptions } from '../commands/status.js';

/**
 * `rollout-queue status [RUN_ID]`: jobs by state, connected workers, known runs; with a run id
 * also results by kind, counters and quarantined leases. Exit 1 when the run does not exist.
 */
export async function statusAction(runId: string | undefined, options: StatusCommandOptions): Promise<ExitCode> {
  const env = cliEnvironment();
  await requireRedis(env);
  const queue = await openQueue(env, options.queue, coordinatorLogger('status'), { writeQueueMeta: false });
  try {
    const read = await readStatus(queue, runId);
    if (runId && !read.run) throw await runNotFound(env, options.queue, runId);
    const idle = read.workers.length === 0 && Object.values(read.counts).every((count) => count === 0);
    const { runs, containment, unused } = await queueExtras(env, options.queue, read.workers.map((w) => w.name), idle);
    const run = read.run;
    // The results file its last CLI coordinator writes, for the resume hints (run --out, resume --out).
    const resultsFile = run?.coordinatorNote ?? undefined;
    // A cancelled or stopped run nobody delivers, not delivered whole: how many Results resume would collect.
    const ended = run && (run.status === 'cancelled' || run.status === 'stopped') && run.endedAt === null && read.delivering === false;
    const undelivered = ended ? (await queue.pendingResults(run.runId)).length : undefined;
    const coordinatorGone = goneHolder(read.coordinator);
    const view = {
      ...read,
      workers: read.workers.map((w) => ({ ...w, details: { ...w.details, ...(containment.get(w.name) ?? { containment: 'unknown' }) } })),
      ...(resultsFile !== undefined ? { resultsFile } : {}),
      ...(undelivered !== undefined ? { undelivered } : {}),
      ...(coordinatorGone !== undefined ? { coordinatorGone } : {}),
    };
    const place = { queue: options.queue, prefix: env.prefix, address: env.address, runs, ...(unused ? { unused } : {}) };
    process.stdout.write(`${options.json ? JSON.stringify(statusJson(view, place), null, 2) : formatStatus(view, place)}\n`);
    return EXIT.ok;
  } finally {
    await queue.close();
  }
}

/**
 * The pid of a coordinator lease holder that recorded this host's name and no longer runs: a
 * `run` killed with SIGKILL holds its lease until it lapses (6 s), and status would show the run
 * as delivered meanwhile, with no hint (fresh-user report). Another host's holder is not checked.
 */
function goneHolder(holder: StatusView['coordinator']): number | undefined {
  if (!holder || holder.pid === null || holder.host !== os.hostname()) return undefined;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'ESRCH' ? holder.pid : undefined;
  }
  // Killed but not reaped yet (its parent is not a shell that waits): a zombie runs nothing.
  try {
    const stat = readFileSync(`/proc/${holder.pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z' ? holder.pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Run ids recorded on the queue (the `runs` set of the key layout), oldest first, and each
 * connected worker's containment level and gaps (`containmentGaps`: the open boundaries'
 * names, `none` at `sealed`) from the info key it refreshes (`keys.workerInfo`).
 * For an `idle` queue (no job, no worker) without runs that nothing used (see
 * `queuesUsedInstead`), `unused` says where queues were used.
 */
async function queueExtras(env: CliEnvironment, queue: string, workers: readonly string[], idle: boolean): Promise<{ runs: string[]; containment: Map<string, Record<string, string>>; unused?: QueuesUsed }> {
  const redis = createRedisClient(env.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const keys = queueKeys(env.prefix, queue);
    const known = (await redis.smembers(keys.runs())).sort();
    // A run past its retention has no record any more; it is no longer a known run.
    const created = known.length === 0 ? [] : ((await known.reduce((pipe, id) => pipe.hget(keys.run(id), RUN_FIELDS.createdAt), redis.pipeline()).exec()) ?? []);
    const runs = known
      .map((id, i) => ({ id, createdAt: created[i]?.[1] as string | null | undefined }))
      .filter((entry): entry is { id: string; createdAt: string } => typeof entry.createdAt === 'string')
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map((entry) => entry.id);
    const infos = workers.length > 0 ? await redis.mget(...workers.map((name) => keys.workerInfo(name))) : [];
    const containment = new Map<string, Record<string, string>>();
    workers.forEach((name, i) => {
      try {
        const info = JSON.parse(infos[i] ?? 'null') as { containment?: unknown; gaps?: unknown } | null;
        if (typeof info?.containment !== 'string') return;
        const gaps = Array.isArray(info.gaps) ? info.gaps.map((gap: unknown) => (gap as { boundary?: unknown } | null)?.boundary).filter((b): b is string => typeof b === 'string') : [];
        containment.set(name, { containment: info.containment, containmentGaps: gaps.length > 0 ? gaps.join(',') : 'none' });
      } catch {
        // A foreign value: shown as unknown.
      }
    });
    const unused = idle && runs.length === 0 ? await queuesUsedInstead(redis, env.prefix, queue) : undefined;
    return { runs, containment, ...(unused ? { unused } : {}) };
  } finally {
    redis.disconnect();
  }
}
