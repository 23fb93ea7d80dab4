import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RolloutQueue, type RolloutDraft } from '../../../src/producer/index.js';
import { detectContainment, launcherName } from '../../../src/sandbox/index.js';
import { artifactProcesses, until, workDirs } from '../../helpers/attempt-traces.js';
import { hostProcesses } from '../../helpers/host-processes.js';
import { fixture, makeSpec, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { startWorkerProcess } from '../../helpers/worker-process.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CASES = path.join(HERE, '..', '..', 'fixtures', 'cases');
const WORKER_MAIN = path.join(HERE, '..', '..', 'fixtures', 'worker-main.mjs');
const caseFile = (name: string, file: string): string => readFileSync(path.join(CASES, name, file), 'utf8');
const caseTasks = (name: string): Array<Record<string, unknown>> =>
  caseFile(name, 'tasks.jsonl').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
const codeRunner = (config: Record<string, unknown>) => ({ $ref: 'rollout-queue/runners:codeRunner', config });
const lastNumber = { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'gold' } };
const python = (timeoutMs: number) => codeRunner({ entrypoint: 'main.py', command: ['python3', 'main.py'], timeoutMs });

// Short locks so a lost worker is noticed in seconds: lock TTL 2 s, stalled check every 1 s.
const FAST = { lockDurationMs: 2000, stalledIntervalMs: 1000, shutdownGraceMs: 200 };

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

/** The one long `node main.js` rollout of the worker-sigkill-orphans-rollout case, with its exact input. */
function orphanCaseDraft(): RolloutDraft {
  const [task] = caseTasks('worker-sigkill-orphans-rollout');
  return { rendered: { files: { 'main.js': caseFile('worker-sigkill-orphans-rollout', 'artifact/main.js') } }, task: task as Record<string, unknown>, run: codeRunner({ entrypoint: 'main.js', timeoutMs: 300_000 }), reward: lastNumber };
}

describe('containment seen from the worker', () => {
  it('worker-sigkill-orphans-rollout: SIGKILLed three times on one lease, no artifact or work dir survives, and redispatched is 2 on the Result and in status', async () => {
    const q = new RawQueue(redis.url);
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: q.name, prefix: TEST_PREFIX });
    const runId = `orphan${Date.now().toString(36)}`;
    const result = rq.rollout(orphanCaseDraft(), { runId });
    const prefix = `${runId}.long.`;
    const workers = [];
    try {
      for (let attempt = 1; attempt <= 3; attempt++) {
        const worker = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 1 }));
        workers.push(worker);
        const running = () => artifactProcesses(prefix, 'main.js').filter((p) => p.cwd.includes(`.a${attempt}-`)).length === 1;
        expect(await until(running, 30_000)).toBe(true);
        expect((await worker.kill()).signal).toBe('SIGKILL');
        // Its rollout child dies with it (PR_SET_PDEATHSIG), and the attempt's namespace with the child.
        expect(await until(() => artifactProcesses(prefix, 'main.js').length === 0, 5_000)).toBe(true);
      }
      // The next worker sweeps the dead attempts' work dirs at start.
      workers.push(await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 1 })));
      const final = await result;
      expect(final).toMatchObject({ kind: 'infrastructure', error: { type: 'WorkerLost' }, redispatched: 2 });
      const status = await rq.status(runId);
      expect(status.run?.redispatched).toBe(2);
      expect(Object.keys(status.run?.quarantined ?? {})).toEqual([`${runId}.long`]);
      expect(workDirs(prefix)).toEqual([]);
      // Every worker logs its start-up sweep with the count. Which worker removed the dead
      // attempts' dirs is not asserted: any worker starting on this machine (another test file's,
      // run in parallel) sweeps dirs whose creator is dead, so the count here depends on others.
      for (const worker of workers.slice(1)) expect(worker.output()).toMatch(/swept \d+ work dir\(s\) and \d+ cgroup\(s\) left by dead attempts/);
      // The start line says how attempts were launched (here: rq-launch's server where it was built).
      for (const worker of workers) expect(worker.output()).toContain(`(launcher ${launcherName(detectContainment('auto'))})`);
    } finally {
      for (const worker of workers) worker.signal('SIGTERM');
      await Promise.all(workers.map((w) => w.exited()));
      await rq.close();
      await q.close();
    }
  });

  it('a worker that stays up removes the work dirs of a SIGKILLed worker\'s attempts, without a worker start (fresh-user report)', async () => {
    const survivorQueue = new RawQueue(redis.url);
    const survivor = await startWorkerProcess(survivorQueue.workerOptions({ ...FAST, concurrency: 1 }));
    const q = new RawQueue(redis.url);
    const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: q.name, prefix: TEST_PREFIX });
    const runId = `leftover${Date.now().toString(36)}`;
    const pending = rq.rollout(orphanCaseDraft(), { runId }).catch((err: unknown) => err);
    const prefix = `${runId}.long.`;
    const victim = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 1 }));
    try {
      expect(await until(() => artifactProcesses(prefix, 'main.js').length === 1, 30_000)).toBe(true);
      expect(workDirs(prefix)).toHaveLength(1);
      expect((await victim.kill()).signal).toBe('SIGKILL');
      expect(await until(() => artifactProcesses(prefix, 'main.js').length === 0, 5_000)).toBe(true);
      // No worker starts from here on: the survivor's liveness sample (every 5 s) sweeps it.
      expect(await until(() => workDirs(prefix).length === 0, 20_000)).toBe(true);
    } finally {
      survivor.signal('SIGTERM');
      await survivor.exited();
      await rq.close();
      await pending;
      await q.close();
      await survivorQueue.close();
    }
  });

  it('BR-44: runMs, cancel and shutdown each leave no work dir (the worker cleans up, not the killed code)', async () => {
    const q = new RawQueue(redis.url);
    const worker = await startWorkerProcess(q.workerOptions({ ...FAST, concurrency: 2 }));
    const main = caseFile('BR-44', 'main.py');
    try {
      // codeRunner's own limit (20 s) is above the spec's runMs (3 s): the rollout ends on runMs.
      const specs = caseTasks('BR-44').map((task) =>
        makeSpec('br44', String(task.id), { rendered: main, task, run: python(20_000), reward: lastNumber, timeouts: { runMs: 3000, hangMs: 10_000 } }),
      );
      await q.add(specs);
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      for (const spec of specs) {
        expect(results.get(spec.leaseId)).toMatchObject({ kind: 'model', error: { type: 'RunTimeout' } });
        expect(workDirs(`${spec.leaseId}.`)).toEqual([]);
      }
      const cancelled = makeSpec('br44c', 'w1', { rendered: main, task: caseTasks('BR-44')[0], run: python(20_000), reward: lastNumber });
      await q.add([cancelled]);
      expect(await until(() => artifactProcesses(`${cancelled.leaseId}.`, 'main.py').length === 1, 30_000)).toBe(true);
      await q.redis.publish(q.keys.cancelChannel(), 'br44c');
      const { results: afterCancel } = await q.waitForAll([cancelled.leaseId]);
      expect(afterCancel.get(cancelled.leaseId)).toMatchObject({ kind: 'caller', error: { type: 'Cancelled' } });
      expect(workDirs(`${cancelled.leaseId}.`)).toEqual([]);
      const handedBack = makeSpec('br44s', 'w1', { rendered: main, task: caseTasks('BR-44')[0], run: python(20_000), reward: lastNumber });
      await q.add([handedBack]);
      expect(await until(() => artifactProcesses(`${handedBack.leaseId}.`, 'main.py').length === 1, 30_000)).toBe(true);
      worker.signal('SIGTERM');
      expect((await worker.exited()).code).toBe(0);
      expect(artifactProcesses(`${handedBack.leaseId}.`, 'main.py')).toEqual([]);
      expect(workDirs(`${handedBack.leaseId}.`)).toEqual([]);
    } finally {
      worker.signal('SIGTERM');
      await worker.exited();
      await q.close();
    }
  });

  it('BR-32: a worker running as PID 1 (no init) leaves no zombie after multi-process artifacts time out or a child crashes mid-run', async () => {
    const q = new RawQueue(redis.url);
    const options = JSON.stringify(q.workerOptions({ ...FAST, concurrency: 1 }));
    const outer = spawn('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', process.execPath, WORKER_MAIN, options], {
      env: { ...process.env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    outer.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    outer.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<void>((resolve) => outer.once('exit', () => resolve()));
    try {
      expect(await until(() => /^ready /m.test(out), 30_000)).toBe(true);
      const workerPid = hostProcesses().find((p) => p.ppid === outer.pid)?.pid as number;
      expect(out).toMatch(/"pid":1,/);
      const specs = caseTasks('BR-32').map((task) => makeSpec('br32', String(task.id), { rendered: caseFile('BR-32', 'main.py'), task, run: python(2500), reward: lastNumber }));
      await q.add(specs);
      const { results } = await q.waitForAll(specs.map((s) => s.leaseId));
      for (const spec of specs) expect(results.get(spec.leaseId)).toMatchObject({ kind: 'model', error: { type: 'RunTimeout' } });
      // Every attempt's processes died inside its own namespace, reaped there: nothing is handed to PID 1.
      expect(hostProcesses().filter((p) => p.ppid === workerPid && p.state === 'Z')).toEqual([]);
      // A rollout child that crashes while its sandbox runs: its launcher is not orphaned to the worker either.
      const crash = makeSpec('br32crash', 'c1', { run: fixture('crashesDuringCodeRun') });
      await q.add([crash]);
      const { results: crashed } = await q.waitForAll([crash.leaseId]);
      expect(crashed.get(crash.leaseId)).toMatchObject({ kind: 'infrastructure', error: { type: 'RedispatchLimit' } });
      expect(hostProcesses().filter((p) => p.ppid === workerPid && p.state === 'Z')).toEqual([]);
    } finally {
      // unshare ignores SIGTERM; --kill-child takes the worker with it.
      outer.kill('SIGKILL');
      await exited;
      await q.close();
    }
  });
});
