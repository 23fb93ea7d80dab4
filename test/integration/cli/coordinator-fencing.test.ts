import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, REPO_ROOT, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';
import { resultLineCount } from './results-file.js';

// The case `redis-restart-coordinator-lease` (run.sh and run-sigstop.sh) with its exact input:
// 30 tasks of 1.5 s on two workers of two slots, one results file, the same `run` command
// started twice. The coordinator lease is a fencing token, so however the first coordinator
// loses it (paused past it, Redis down past it), the file ends with every lease exactly once.
const CASE = path.join(REPO_ROOT, 'test', 'fixtures', 'cases', 'redis-restart-coordinator-lease');
const TASKS = 30;

let redis: TestRedis;
let dir: string;
let workers: CliProcess[] = [];

const lines = resultLineCount;

/** `results lines`, `distinct leases` and `leases written twice` of the case's check. */
function census(file: string): { lines: number; distinct: number; twice: number } {
  const ids = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => (JSON.parse(l) as { leaseId: string }).leaseId);
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return { lines: ids.length, distinct: counts.size, twice: [...counts.values()].filter((n) => n > 1).length };
}

function runCommand(runId: string, out: string, env: Record<string, string>): CliProcess {
  return startCli([
    'run', '--tasks', path.join(CASE, 'tasks.jsonl'), '--artifact', path.join(CASE, 'artifact'),
    '--run', 'rollout-queue/runners:codeRunner', '--run-config', '{"entrypoint":"main.js","timeoutMs":20000}',
    '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"gold"}',
    '--run-id', runId, '--out', out,
  ], { env });
}

beforeAll(async () => {
  // Private with AOF always, as the case runs it: the second test kills and restarts it.
  redis = await startRedis({ private: true, appendfsync: 'always' });
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-fence-'));
});
afterEach(async () => {
  for (const worker of workers) worker.child.kill('SIGTERM');
  await Promise.all(workers.map((worker) => worker.done));
  workers = [];
  expect(await killLeftovers()).toEqual([]);
});
afterAll(async () => {
  await redis?.stop();
  await rm(dir, { recursive: true, force: true });
});

function startWorkers(env: Record<string, string>): void {
  workers = ['w1', 'w2'].map((name) => startCli(['worker', '--concurrency', '2', '--name', name], { env }));
}

describe('fenced delivery (case redis-restart-coordinator-lease)', () => {
  it('run-sigstop.sh: A SIGSTOPped past its lease, B started with the same command, A resumed: no lease twice in the file', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('fz') };
    const out = path.join(dir, 'zombie1.jsonl');
    startWorkers(env);
    const a = runCommand('zombie1', out, env);
    await waitFor(() => lines(out) >= 2, 60_000, 'A delivering');
    a.child.kill('SIGSTOP');
    const b = runCommand('zombie1', out, env);
    await waitFor(() => lines(out) >= 8 || b.child.exitCode !== null, 90_000, 'B delivering');
    a.child.kill('SIGCONT');
    const [endA, endB] = await Promise.all([a.done, b.done]);
    expect(census(out)).toEqual({ lines: TASKS, distinct: TASKS, twice: 0 });
    expect(endB.code, endB.stderr).toBe(0);
    // A either retook the free lease after B finished (exit 0, nothing left to deliver) or
    // gave up with the lost-lease error; it never delivered a Result B had.
    expect(endA.stderr).toContain('lost the coordinator lease');
    if (endA.code !== 0) expect(endA.stderr).toContain('lost its lease');
  });

  it('run.sh: Redis killed and restarted from its AOF after longer than the lease, the same command started again: no duplicate lines', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('fr') };
    const out = path.join(dir, 'lease1.jsonl');
    startWorkers(env);
    const a = runCommand('lease1', out, env);
    await waitFor(() => lines(out) >= 2, 60_000, 'A delivering');
    await redis.kill();
    // Down past COORDINATOR_LEASE_MS (6 s): wait on A noticing, not on a clock.
    await waitFor(() => a.stderr().includes('lost the coordinator lease'), 30_000, 'A to notice the lost lease');
    await redis.restart();
    expect(a.child.exitCode).toBeNull();
    const b = runCommand('lease1', out, env);
    const [endA, endB] = await Promise.all([a.done, b.done]);
    expect(census(out)).toEqual({ lines: TASKS, distinct: TASKS, twice: 0 });
    // One of them delivered the rest; the other was refused (RunBusyError) or found nothing left.
    expect([endA.code, endB.code], `${endA.stderr}\n${endB.stderr}`).toContain(0);
    for (const end of [endA, endB]) if (end.code !== 0) expect(end.stderr).toMatch(/being delivered by another coordinator|lost its lease/);
  });
});
