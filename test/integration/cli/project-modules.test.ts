import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';

// Fresh-user report (library pass): with rollout-queue installed as a symlink (`npm install
// <dir>`, `npm link`), its real path lies outside the user's project, and a worker never found
// the project's own run/reward package ("Cannot find package 'my-rollouts' imported from
// …/dist/ref/importer.js"), though the error said to npm install it, which had been done.
// Here rollout-queue is this repository and the project a temp dir holding only its own package.
let redis: TestRedis;
let project: string;
beforeAll(async () => {
  redis = await startRedis();
  project = await mkdtemp(path.join(os.tmpdir(), 'rq-project-'));
  const pkg = path.join(project, 'node_modules', 'my-rollouts');
  await mkdir(pkg, { recursive: true });
  await writeFile(path.join(pkg, 'package.json'), JSON.stringify({ name: 'my-rollouts', version: '1.0.0', type: 'module', exports: { '.': './index.js' } }));
  await writeFile(path.join(pkg, 'index.js'), 'export const echoRun = () => async (rendered, task) => `answer ${task.n}`;\nexport const saysAnswer = () => (task, output) => (output === `answer ${task.n}` ? 1 : 0);\n');
  await writeFile(path.join(project, 'tasks.jsonl'), '{"id":"a","n":1}\n{"id":"b","n":2}\n');
  await writeFile(path.join(project, 'artifact.txt'), 'x');
});
afterAll(async () => {
  await rm(project, { recursive: true, force: true });
  await redis.stop();
});

it("a worker started in a project finds the project's own packages when rollout-queue is not installed inside it", async () => {
  const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('proj') };
  const worker = startCli(['worker', '--queue', 'projq', '--allow', 'my-rollouts'], { env: { ...env, LOG_LEVEL: 'info' }, cwd: project });
  try {
    await waitFor(() => (worker.stdout() + worker.stderr()).includes('"msg":"worker running"') || worker.child.exitCode !== null, 30_000, 'the worker to start');
    const run = await runCli(['run', '--queue', 'projq', '--tasks', 'tasks.jsonl', '--artifact', 'artifact.txt', '--run', 'my-rollouts:echoRun', '--reward', 'my-rollouts:saysAnswer', '--run-id', 'proj1', '--out', 'results.jsonl'], { env, cwd: project });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/ok\s+2\s+mean reward 1\.000/);
  } finally {
    worker.child.kill('SIGTERM');
    await worker.done;
  }
  expect(await killLeftovers()).toEqual([]);
});
