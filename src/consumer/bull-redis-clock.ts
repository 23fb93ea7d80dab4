/** A clock giving Redis' time now, ms since the epoch (`RedisClock`). */
export interface RedisTimeSource {
  nowMs(): number;
}

/**
 * Where the worker-side BullMQ scripts take their `timestamp` (BullMQ 6.7.0, each script's
 * header in `dist/esm/commands/<name>-<keys>.lua`), as an index into the argument list the
 * backend passes to `execCommand` (its keys, then its ARGV): `keys + ARGV index - 1`.
 * - `moveToActive-11` ARGV[2]: promotes delayed jobs due by it (`promoteDelayedJobs`), and is the
 *   started job's `processedOn`.
 * - `moveToFinished-14` ARGV[2]: `finishedOn` and the score in `completed`/`failed` (what the
 *   coordinator's reconciliation reads from), and the promotion when it fetches the next job.
 * - `moveStalledJobsToWait-9` ARGV[3]: the stalled check's own mark.
 * A test (`test/unit/consumer/bull-redis-clock.test.ts`) reads those headers, so an upgrade of
 * BullMQ that moves one fails there rather than silently.
 */
export const TIMESTAMP_ARG: Readonly<Record<string, number>> = {
  moveToActive: 11 + 2 - 1,
  moveToFinished: 14 + 2 - 1,
  moveStalledJobsToWait: 9 + 3 - 1,
};

/** The part of BullMQ's Redis backend this wraps (`RedisQueueBackend.execCommand`, public in 6.7.0). */
interface ScriptRunner {
  execCommand(client: unknown, commandName: string, args: unknown[]): Promise<unknown>;
}

/**
 * Makes a BullMQ worker's own scripts run on the Redis clock: the `timestamp` each of
 * {@link TIMESTAMP_ARG} gets is `clock.nowMs()` instead of this host's `Date.now()`.
 *
 * Why: BullMQ promotes a delayed job when its due time (its score) is at or before the
 * timestamp the *taking* worker passes. Due times are on the Redis clock
 * (`moveToDelayedOnRedisClock`), so a worker whose wall clock runs 10 min ahead took every
 * handed-back lease again at once, with no back-off (its own MissingSecret hand-backs used up
 * the lease's re-dispatch budget in milliseconds); one behind took them 10 min late. With
 * every comparison on Redis' clock, a skewed host behaves as a right one. `finishedOn` (the
 * score the coordinator's reconciliation cursor follows) is on the same clock too.
 * @param backend the worker's `backend` (BullMQ's `RedisQueueBackend`).
 */
export function runScriptsOnRedisClock(backend: unknown, clock: RedisTimeSource): void {
  const runner = backend as ScriptRunner;
  if (typeof runner.execCommand !== 'function') throw new Error('BullMQ backend without execCommand: the worker cannot put its scripts on the Redis clock (BullMQ upgraded? see src/consumer/bull-redis-clock.ts)');
  const exec = runner.execCommand.bind(runner);
  runner.execCommand = (client, commandName, args) => {
    const at = TIMESTAMP_ARG[commandName];
    if (at !== undefined && at < args.length) {
      const copy = [...args];
      copy[at] = clock.nowMs();
      return exec(client, commandName, copy);
    }
    return exec(client, commandName, args);
  };
}

/**
 * A time on the Redis clock (ms since the epoch) as the same instant on this host's wall clock:
 * for BullMQ's in-process comparisons with `Date.now()` (its lock renewal, its blocking wait
 * for the next delayed job).
 */
export function hostTimeOf(redisMs: number, clock: RedisTimeSource): number {
  return redisMs - clock.nowMs() + Date.now();
}
