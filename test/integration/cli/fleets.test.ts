import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { cliHint, runCli, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';

// Two worker pools with different --placement labels and runs placed from the command line.
let redis: TestRedis;
let dir: string;
let artifact: string;
let env: Record<string, string>;
let workers: CliProcess[] = [];
const queue = 'cli-fleets';

const runArgs = (tasksFile: string, extra: string[]): string[] => [
  'run', '--tasks', tasksFile, '--artifact', artifact,
  '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"answer"}',
  '--queue', queue, ...extra,
];

beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-cli-fleets-'));
  artifact = path.join(dir, 'two.js');
  await writeFile(artifact, "console.log('2');\n");
  env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('fl') };
  workers = [
    startCli(['worker', '--queue', queue, '--name', 'pool-eu', '--placement', 'region=eu-west', '--placement', 'gpu=h100'], { env }),
    startCli(['worker', '--queue', queue, '--name', 'pool-us', '--placement', 'region=us-east'], { env }),
  ];
  await waitFor(async () => (await runCli(['status', '--queue', queue], { env })).stdout.includes('Workers connected: 2'), 30_000, 'two workers');
});

afterAll(async () => {
  for (const worker of workers) worker.child.kill('SIGTERM');
  await Promise.all(workers.map((worker) => worker.done));
  await rm(dir, { recursive: true, force: true });
  await redis?.stop();
});

describe('run --placement', () => {
  it('routes every task to a worker with the labels; a task line\'s own placement wins', async () => {
    const tasks = path.join(dir, 'tasks.jsonl');
    await writeFile(tasks, [
      JSON.stringify({ id: 'a', answer: 2 }),
      JSON.stringify({ id: 'b', answer: 2 }),
      JSON.stringify({ id: 'c', answer: 2, placement: { region: 'us-east' } }),
    ].join('\n') + '\n');
    const out = path.join(dir, 'placed.jsonl');
    const outcome = await runCli(runArgs(tasks, ['--run-id', 'placed', '--out', out, '--placement', 'region=eu-west', '--placement', 'gpu=h100']), { env, cwd: dir });
    expect(outcome.code, outcome.stderr).toBe(0);
    const results = readFileSync(out, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { taskId: string; kind: string; worker: string });
    expect(Object.fromEntries(results.map((r) => [r.taskId, [r.kind, r.worker]]))).toEqual({ a: ['ok', 'pool-eu'], b: ['ok', 'pool-eu'], c: ['ok', 'pool-us'] });
  });

  it('a placement no worker has shows in status as waiting with no worker', async () => {
    const tasks = path.join(dir, 'gpu.jsonl');
    await writeFile(tasks, `${JSON.stringify({ id: 'g', answer: 2 })}\n`);
    const run = startCli(runArgs(tasks, ['--run-id', 'stuck', '--out', path.join(dir, 'stuck.jsonl'), '--placement', 'gpu=a100']), { env, cwd: dir });
    try {
      let status = '';
      await waitFor(async () => (status = (await runCli(['status', '--queue', queue], { env })).stdout).includes('gpu=a100  waiting=1'), 30_000, 'the placement in status');
      // Fresh-user report: the hint said `--placement KEY=VALUE …` while the labels were known.
      expect(status).toContain(`gpu=a100  waiting=1 active=0 workers=0  NO WORKER can take these leases: start \`${cliHint(env)} worker --queue ${queue} --placement gpu=a100\``);
      expect(status).toMatch(/gpu=h100,region=eu-west {2}waiting=0 active=0 workers=1/);
      const json = JSON.parse((await runCli(['status', '--json', '--queue', queue], { env })).stdout) as { placements: { labels: Record<string, string>; waiting: number; workers: number }[] };
      expect(json.placements).toContainEqual(expect.objectContaining({ labels: { gpu: 'a100' }, waiting: 1, workers: 0 }));
    } finally {
      run.child.kill('SIGKILL');
      await run.done;
    }
  });

  it('refuses a label that is not KEY=VALUE, naming the option', async () => {
    const outcome = await runCli(['worker', '--queue', queue, '--placement', 'region'], { env });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/--placement.*KEY=VALUE/);
  });
});
