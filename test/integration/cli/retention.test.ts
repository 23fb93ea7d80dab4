import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { REPO_ROOT, cliHint, runCli, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';

// Case BR-43 with its exact input (100 tasks, the reasoning-steps main.py, lastNumber): once a
// run is completed and every Result is in the results file, its job hashes and records carry
// the retention's expiry, `purge` removes the run at once, and no key with its run id is left.
const CASE = path.join(REPO_ROOT, 'test', 'fixtures', 'cases', 'BR-43');
let redis: TestRedis;
let client: Redis;
let dir: string;
let worker: CliProcess;
let env: Record<string, string>;
const queue = 'br43q';

async function scan(pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

beforeAll(async () => {
  redis = await startRedis({ private: true });
  client = new Redis(redis.url);
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-br43-'));
  env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('br') };
  worker = startCli(['worker', '--queue', queue, '--concurrency', '2', '--name', 'br43'], { env });
});
afterAll(async () => {
  worker.child.kill('SIGTERM');
  await worker.done;
  client.disconnect();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('BR-43: a delivered run does not stay in Redis for good', () => {
  it('run with --retain: the job hashes and run record expire; purge removes every key of the run now', async () => {
    const out = path.join(dir, 'results.jsonl');
    const runId = 'br43run';
    const run = await runCli([
      'run', '--queue', queue, '--tasks', path.join(CASE, 'tasks.jsonl'), '--artifact', path.join(CASE, 'main.py'),
      '--run', 'rollout-queue/runners:codeRunner', '--run-config', '{"entrypoint":"main.py","command":["python3","main.py"],"timeoutMs":4000}',
      '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"gold"}',
      '--run-id', runId, '--out', out, '--retain', '2h',
    ], { env });
    expect(run.code, run.stderr).toBe(0);
    expect((await readFile(out, 'utf8')).trim().split('\n')).toHaveLength(100);
    const prefix = env.ROLLOUT_QUEUE_PREFIX as string;
    expect(await client.hget(`${prefix}:${queue}:~run:${runId}`, 'status')).toBe('completed');
    for (const key of [`${prefix}:${queue}:${runId}.g000`, `${prefix}:${queue}:~run:${runId}`]) {
      const ttl = await client.ttl(key);
      expect(ttl, key).toBeGreaterThan(7000);
      expect(ttl, key).toBeLessThanOrEqual(7200);
    }
    expect((await scan(`${prefix}:${queue}:${runId}.*`)).length).toBe(100);

    const status = await runCli(['status', runId, '--queue', queue], { env });
    expect(status.stdout).toMatch(/delivered +\S+; expires from Redis at \S+ \(purge removes it now\)/);

    const purge = await runCli(['purge', runId, '--queue', queue], { env });
    expect(purge.code, purge.stderr).toBe(0);
    expect(purge.stdout).toContain(`purged run ${runId}: 100 lease(s)`);
    expect(await scan(`*${runId}*`)).toEqual([]);
    // Fresh-user report: purge of an unknown run printed "error: Error: no run …" and a stack trace.
    const again = await runCli(['purge', runId, '--queue', queue], { env });
    expect(again.code).toBe(1);
    expect(again.stderr.trim().split('\n')).toEqual([`error: no run "${runId}" on queue "${queue}" (prefix "${prefix}"); check the id, --queue and ROLLOUT_QUEUE_PREFIX (${cliHint(env)} status --queue ${queue} lists the runs)`]);
  });
});

// Fresh-user report: `cancel` then `purge` of a run whose coordinator was gone dropped the
// Results that had finished but were never delivered (44 of 60) without a word.
// Fresh-user report (second pass): `purge --older-than 0s --queue <typo>` printed "purged 0 ended
// run(s)" and nothing more.
it('purge --older-than on a queue nothing used warns naming the queues used under the prefix', async () => {
  const outcome = await runCli(['purge', '--older-than', '0s', '--queue', `${queue}x`], { env });
  expect(outcome.code, outcome.stderr).toBe(0);
  expect(outcome.stdout).toBe('purged 0 ended run(s)\n');
  expect(outcome.stderr).toMatch(new RegExp(`^warning: nothing has used queue "${queue}x" under prefix "[^"]+" yet \\(queues used there: (.*, )?${queue}(, .*)?\\); nothing was purged: check --queue and ROLLOUT_QUEUE_PREFIX\n$`));
});

describe('purge of a run with finished Results never delivered', () => {
  it('is refused with how to collect or drop them; --discard-undelivered purges and says so', async () => {
    const out = path.join(dir, 'undelivered.jsonl');
    const tasks = path.join(dir, 'ten.jsonl');
    await writeFile(tasks, `${(await readFile(path.join(CASE, 'tasks.jsonl'), 'utf8')).trim().split('\n').slice(0, 10).join('\n')}\n`);
    const runId = 'undel1';
    const run = startCli([
      'run', '--queue', queue, '--tasks', tasks, '--artifact', path.join(CASE, 'main.py'),
      '--run', 'rollout-queue/runners:codeRunner', '--run-config', '{"entrypoint":"main.py","command":["python3","main.py"],"timeoutMs":4000}',
      '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"gold"}', '--run-id', runId, '--out', out,
    ], { env });
    const lines = async (): Promise<number> => (await readFile(out, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
    await waitFor(async () => (await lines()) >= 1, 60_000, 'the first Result in the file');
    run.child.kill('SIGKILL');
    await run.done;
    const prefix = env.ROLLOUT_QUEUE_PREFIX as string;
    const jobs = (await scan(`${prefix}:${queue}:${runId}.*`)).filter((key) => !key.endsWith(':logs') && !key.endsWith(':lock'));
    await waitFor(async () => (await Promise.all(jobs.map((key) => client.hexists(key, 'finishedOn')))).every((n) => n === 1), 60_000, 'every job of the run to finish');
    // The killed coordinator's lease lapses within 6 s (purge refuses a run being delivered).
    await waitFor(async () => (await client.exists(`${prefix}:${queue}:~run:${runId}:coordinator`)) === 0, 30_000, 'the killed coordinator\'s lease to lapse');
    // Still running (its coordinator died): the hint is the command to paste (fresh-user report:
    // it said `rollout-queue cancel` where every other hint says `node bin/rollout-queue.js`).
    const running = await runCli(['purge', runId, '--queue', queue], { env });
    expect(running.code).toBe(1);
    expect(running.stderr).toContain(`run ${runId} is still running: cancel it first with \`${cliHint(env)} cancel ${runId} --queue ${queue}\``);
    expect((await runCli(['cancel', runId, '--queue', queue], { env })).code).toBe(0);
    // Counted from the run's delivered set, not the file: the coordinator writes a line before it
    // acknowledges it, so a SIGKILL between the two leaves a line whose Result is still
    // undelivered in Redis (a CI run saw 10 undelivered with 1 line in the file).
    const acknowledged = await client.scard(`${prefix}:${queue}:~run:${runId}:delivered`);
    expect(await lines()).toBeGreaterThanOrEqual(acknowledged);
    const undelivered = 10 - acknowledged;
    // Fresh-user report: a second cancel said "purge removes it", and purge then refused.
    const again = await runCli(['cancel', runId, '--queue', queue], { env });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`run ${runId} is already cancelled: nothing to cancel. It has ${undelivered} finished Result(s) not delivered yet: collect them with \`${cliHint(env)} resume ${runId} --queue ${queue} --out ${out}\`, or drop them with \`${cliHint(env)} purge ${runId} --queue ${queue} --discard-undelivered\``);
    const refused = await runCli(['purge', runId, '--queue', queue], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`run ${runId} has ${undelivered} Result(s) that finished but were never delivered; nothing was removed`);
    expect(refused.stderr).toContain(`purge ${runId} --queue ${queue} --discard-undelivered`);
    expect(refused.stderr).toContain(`resume ${runId} --queue ${queue} --out ${out}`); // the run's own file
    // --older-than lists it as skipped in the same words (fresh-user report: it printed the
    // library's "collect them first (attach, the CLI's resume)", no command to paste).
    const older = await runCli(['purge', '--older-than', '0s', '--queue', queue], { env });
    expect(older.code, older.stderr).toBe(0);
    expect(older.stdout).toContain(`  skipped ${runId}: run ${runId} has ${undelivered} Result(s) that finished but were never delivered; nothing was removed`);
    // Fresh-user report: "purged N run(s) that ended 0ms ago or earlier".
    expect(older.stdout).toMatch(/^purged \d+ ended run\(s\)$/m);
    expect(older.stdout).toContain(`resume ${runId} --queue ${queue} --out ${out}`);
    expect(older.stdout).not.toContain('attach');
    const purged = await runCli(['purge', runId, '--queue', queue, '--discard-undelivered'], { env });
    expect(purged.code, purged.stderr).toBe(0);
    expect(purged.stdout).toContain(`purged run ${runId}: 10 lease(s)`);
    expect(purged.stdout).toContain(`(${undelivered} finished Result(s) never delivered were dropped, as --discard-undelivered asked)`);
    expect(await scan(`*${runId}*`)).toEqual([]);
  });
});
