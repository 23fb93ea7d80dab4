import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';

// `rollout-queue dashboard`: bull-board over the queues, read-only, job data summarised.
const SECRET_MARKER = 'TASK-BODY-MARKER-7f3a9c';
const ENV_VALUE_MARKER = 'ENV-VALUE-MARKER-51d2';
let redis: TestRedis;
let prefix: string;

beforeAll(async () => {
  redis = await startRedis();
  prefix = uniquePrefix('dash');
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  try {
    const rollouts = new Queue('rollouts', { connection, prefix });
    // A rollout job as the producer writes it, plus a malformed one from another client.
    await rollouts.add('rollout', {
      v: 1,
      leaseId: 'dash-run.t1',
      runId: 'dash-run',
      runAttemptId: 'a1',
      rendered: { files: { 'main.js': `console.log("${SECRET_MARKER}")` } },
      task: { id: 't1', question: `What is ${SECRET_MARKER}?`, answer: 42 },
      run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.js', apiKey: ENV_VALUE_MARKER } },
      reward: { $ref: 'rollout-queue/rewards:lastNumber', config: { goldKey: 'answer' } },
      sandbox: { env: ['OPENAI_API_KEY'], memoryMb: 512 },
    }, { jobId: 'dash-run.t1' });
    await rollouts.add('rollout', { task: SECRET_MARKER, sandbox: { env: { OPENAI_API_KEY: ENV_VALUE_MARKER } } }, { jobId: 'garbage.1' });
    await rollouts.close();
    const other = new Queue('side-queue', { connection, prefix });
    await other.add('rollout', { task: { id: 'x' } }, { jobId: 'side.1' });
    await other.close();
  } finally {
    connection.disconnect();
  }
});

afterAll(async () => {
  await redis?.stop();
});

afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

async function startDashboardCli(args: string[]): Promise<{ cli: CliProcess; url: string }> {
  const cli = startCli(['dashboard', '--port', '0', ...args], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
  await waitFor(() => /dashboard: (\S+)/.test(cli.stdout()) || cli.child.exitCode !== null, 30_000, 'the dashboard URL');
  const url = /dashboard: (\S+)/.exec(cli.stdout())?.[1];
  if (!url) throw new Error(`no URL printed: ${cli.stdout()}${cli.stderr()}`);
  return { cli, url };
}

async function stop(cli: CliProcess): Promise<void> {
  cli.child.kill('SIGINT');
  const end = await cli.done;
  expect(end.code, end.stderr).toBe(0);
}

describe('rollout-queue dashboard', () => {
  it('serves bull-board over the queue; job data shows summaries, never the task body or env values', async () => {
    const { cli, url } = await startDashboardCli(['--queue', 'rollouts']);
    try {
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<html');

      const api = await fetch(new URL('api/queues?activeQueue=rollouts&status=latest&page=1&jobsPerPage=10', url));
      expect(api.status).toBe(200);
      const body = await api.text();
      const { queues } = JSON.parse(body) as { queues: Array<{ name: string; readOnlyMode: boolean; jobs: Array<{ id: string; data: Record<string, unknown> }> }> };
      expect(queues.map((queue) => queue.name)).toEqual(['rollouts']);
      const [queue] = queues;
      expect(queue?.readOnlyMode).toBe(true);
      expect(queue?.jobs.map((job) => job.id).sort()).toEqual(['dash-run.t1', 'garbage.1']);
      const rollout = queue?.jobs.find((job) => job.id === 'dash-run.t1')?.data;
      expect(rollout).toMatchObject({
        leaseId: 'dash-run.t1',
        task: { id: 't1', fields: ['id', 'question', 'answer'] },
        rendered: { kind: 'files', files: ['main.js'], count: 1 },
        run: { $ref: 'rollout-queue/runners:codeRunner', config: { entrypoint: 'main.js', apiKey: '[redacted]' } },
        sandbox: { env: ['OPENAI_API_KEY'], memoryMb: 512 },
      });
      expect(body).not.toContain(SECRET_MARKER);
      expect(body).not.toContain(ENV_VALUE_MARKER);

      const job = await fetch(new URL('api/queues/rollouts/garbage.1', url));
      expect(job.status).toBe(200);
      const jobBody = await job.text();
      expect(jobBody).not.toContain(SECRET_MARKER);
      expect(jobBody).not.toContain(ENV_VALUE_MARKER);

      // Read-only: bull-board answers 405 to writes.
      const pause = await fetch(new URL('api/queues/rollouts/pause', url), { method: 'PUT' });
      expect(pause.status).toBe(405);
    } finally {
      await stop(cli);
    }
  });

  it('without --queue it shows rollouts plus the queues found under the prefix', async () => {
    const { cli, url } = await startDashboardCli([]);
    try {
      const api = await fetch(new URL('api/queues', url));
      expect(api.status).toBe(200);
      const { queues } = (await api.json()) as { queues: Array<{ name: string }> };
      expect(queues.map((queue) => queue.name).sort()).toEqual(['rollouts', 'side-queue']);
      expect(cli.stdout()).toContain('showing queue(s) rollouts, side-queue (read-only');
    } finally {
      await stop(cli);
    }
  });
});
