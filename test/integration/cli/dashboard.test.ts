import { createServer } from 'node:net';
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { killLeftovers, runCli, startCli, uniquePrefix, waitFor, type CliProcess } from './cli-process.js';

// `rollout-queue dashboard`: bull-board over the queues, read-only, job data summarised.
const SECRET_MARKER = 'TASK-BODY-MARKER-7f3a9c';
const ENV_VALUE_MARKER = 'ENV-VALUE-MARKER-51d2';
const INSTALL_PATH = '/srv/secret-install/app';
const REDIS_ADDRESS = '10.9.8.7:6380';
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
    // A mixed run's finished jobs: Results of each kind (BullMQ lists all of them as completed)
    // and one job BullMQ itself failed, with a stack trace naming install paths and Redis.
    const mixed = new Queue('mixed', { connection, prefix });
    const result = (taskId: string, kind: string, error: { type: string; message: string } | null, reward: number | null) => ({
      leaseId: `mix.${taskId}`, runId: 'mix', taskId, kind, output: kind === 'ok' ? '42' : null, reward, error,
      attempts: 1, redispatched: 0, worker: 'w1', queuedMs: 5, runMs: 10, finishedAt: new Date().toISOString(), cost: [],
    });
    const mixedJobs = [
      { id: 'mix.t1', task: { id: 't1' }, result: result('t1', 'ok', null, 1) },
      { id: 'mix.t2', task: { id: 't2' }, result: result('t2', 'model', { type: 'TypeError', message: `x is not a function\n    at run (${INSTALL_PATH}/main.js:3:9)` }, null) },
      { id: 'mix.t3', task: { id: 't3' }, result: result('t3', 'infrastructure', { type: 'RedisUnavailable', message: `connect ECONNREFUSED ${REDIS_ADDRESS} via redis://:hunter2@${REDIS_ADDRESS}` }, null) },
      { id: 'mix.t4', task: { id: 't4' }, result: null },
    ];
    for (const job of mixedJobs) await mixed.add('rollout', { v: 1, leaseId: job.id, runId: 'mix', task: job.task }, { jobId: job.id });
    const worker = new Worker('mixed', async (job) => {
      const found = mixedJobs.find((candidate) => candidate.id === job.id);
      if (!found?.result) throw new Error(`Missing lock for job ${job.id} at ${INSTALL_PATH}/node_modules/bullmq/dist/worker.js (redis ${REDIS_ADDRESS})`);
      return found.result;
    }, { connection: { url: redis.url } as ConnectionOptions, prefix });
    const finished = new Promise<void>((resolve) => {
      let left = mixedJobs.length;
      const done = (): void => void (--left === 0 && resolve());
      worker.on('completed', done);
      worker.on('failed', done);
    });
    await finished;
    await worker.close();
    await mixed.close();
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

async function startDashboardCli(args: string[], env: Record<string, string> = {}): Promise<{ cli: CliProcess; url: string }> {
  const cli = startCli(['dashboard', '--port', '0', ...args], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix, ...env } });
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
      expect(queues.map((queue) => queue.name).sort()).toEqual(['mixed', 'rollouts', 'side-queue']);
      expect(cli.stdout()).toContain('showing queue(s) rollouts, mixed, side-queue (read-only');
      expect(cli.stderr()).not.toContain('warning');
      // Fresh-user report: a queue made after the dashboard started never showed.
      const connection = new Redis(redis.url);
      const later = new Queue('later-queue', { connection, prefix });
      try {
        await later.add('rollout', { task: { id: 'x' } }, { jobId: 'later.1' });
        await waitFor(async () => {
          const { queues: shown } = (await (await fetch(new URL('api/queues', url))).json()) as { queues: Array<{ name: string }> };
          return shown.some((queue) => queue.name === 'later-queue');
        }, 30_000, 'the queue made later in the list');
      } finally {
        await later.obliterate({ force: true });
        await later.close();
        connection.disconnect();
      }
    } finally {
      await stop(cli);
    }
  });

  // Fresh-user report (second pass): under a misspelt ROLLOUT_QUEUE_PREFIX it showed an empty
  // `rollouts` without a word (with --queue it warned).
  it('without --queue under a prefix nothing used, it warns naming the prefixes used in the database', async () => {
    // A database of its own: the prefixes named are every one with a queue in it.
    const url = new URL(redis.url);
    url.pathname = '/10';
    const probe = new Redis(url.toString());
    const used = uniquePrefix('dash');
    await probe.hset(`${used}:arith:meta`, 'version', 'bullmq:6.7.0');
    const { cli } = await startDashboardCli([], { REDIS_URL: url.toString(), ROLLOUT_QUEUE_PREFIX: `${used}x` });
    try {
      await waitFor(() => cli.stderr().includes('warning:'), 10_000, 'the warning');
      expect(cli.stderr()).toBe(
        `warning: nothing has used queue "rollouts" under prefix "${used}x" yet (no queue there was used yet; prefixes used in this Redis: "${used}" (arith); set ROLLOUT_QUEUE_PREFIX to one of them); it shows empty until a run or worker uses it: check --queue and ROLLOUT_QUEUE_PREFIX\n`,
      );
    } finally {
      await stop(cli);
      await probe.del(`${used}:arith:meta`);
      probe.disconnect();
    }
  });


  it('a mixed run: each job names its Result kind, failures apart from ok; no stack, install path or Redis detail is served', async () => {
    const { cli, url } = await startDashboardCli(['--queue', 'mixed']);
    try {
      const api = await fetch(new URL('api/queues?activeQueue=mixed&status=latest&page=1&jobsPerPage=10', url));
      expect(api.status).toBe(200);
      const body = await api.text();
      const jobs = (JSON.parse(body) as { queues: Array<{ jobs: Array<{ id: string; name: string; returnValue: Record<string, unknown> | null; stacktrace: string[]; failedReason?: string }> }> }).queues[0]?.jobs ?? [];
      const byId = new Map(jobs.map((job) => [job.id, job]));
      expect(byId.get('mix.t1')?.name).toBe('✔ ok · t1 · reward 1');
      expect(byId.get('mix.t2')?.name).toBe('✖ model · t2 · TypeError');
      expect(byId.get('mix.t3')?.name).toBe('⚠ infrastructure · t3 · RedisUnavailable');
      expect(byId.get('mix.t4')?.name).toBe('✖ failed · t4');
      expect(byId.get('mix.t2')?.returnValue).toMatchObject({ verdict: '✖ model', kind: 'model', error: { type: 'TypeError', message: 'x is not a function' } });
      expect(byId.get('mix.t3')?.returnValue).toMatchObject({ kind: 'infrastructure', error: { message: 'connect ECONNREFUSED [address] via [address]' } });
      expect(byId.get('mix.t4')?.stacktrace).toEqual([]);
      expect(byId.get('mix.t4')?.failedReason).toBe('Missing lock for job mix.t4 at …/dist/worker.js (redis [address])');
      for (const leak of [INSTALL_PATH, 'secret-install', REDIS_ADDRESS, 'hunter2', '    at ']) expect(body).not.toContain(leak);

      const one = await (await fetch(new URL('api/queues/mixed/mix.t4', url))).text();
      for (const leak of [INSTALL_PATH, REDIS_ADDRESS]) expect(one).not.toContain(leak);
      const stats = await fetch(new URL('api/redis/stats', url));
      expect(stats.status).toBe(403);
      expect(await stats.text()).not.toMatch(/redis_version|tcp_port|\d+\.\d+\.\d+/);
    } finally {
      await stop(cli);
    }
  });

  // Fresh-user report: `dashboard --queue <typo>` showed an empty queue without a word.
  it('--queue naming a queue nothing used: it starts, and warns naming the queues used under the prefix', async () => {
    const { cli } = await startDashboardCli(['--queue', 'rollouts', '--queue', 'rolouts']);
    try {
      await waitFor(() => cli.stderr().includes('warning:'), 10_000, 'the warning');
      expect(cli.stderr().trim()).toBe(
        `warning: nothing has used queue "rolouts" under prefix "${prefix}" yet (queues used there: mixed, rollouts, side-queue); it shows empty until a run or worker uses it: check --queue and ROLLOUT_QUEUE_PREFIX`,
      );
      expect(cli.stdout()).toContain('showing queue(s) rollouts, rolouts (read-only');
    } finally {
      await stop(cli);
    }
  });

  it('--port already taken: one line naming it and the fix, exit 1', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as { port: number }).port;
      const outcome = await runCli(['dashboard', '--port', String(port)], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain(`--port ${port} is already in use by another process; stop it or pass another port (0 picks a free one)`);
    } finally {
      taken.close();
    }
  });

  it('refuses to listen beyond loopback without a login, naming the variables to set', async () => {
    const outcome = await runCli(['dashboard', '--port', '0', '--host', '0.0.0.0'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain('--host 0.0.0.0 lets other machines reach the dashboard');
    expect(outcome.stderr).toContain('ROLLOUT_QUEUE_DASHBOARD_TOKEN');
    expect(outcome.stdout).not.toContain('dashboard: http');
  });

  it('with ROLLOUT_QUEUE_DASHBOARD_TOKEN every request needs the token (bearer, or basic auth password for a browser)', async () => {
    const token = 'dash-token-3c9e';
    const { cli, url } = await startDashboardCli(['--queue', 'rollouts'], { ROLLOUT_QUEUE_DASHBOARD_TOKEN: token });
    try {
      const anonymous = await fetch(new URL('api/queues', url));
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toContain('Basic');
      expect((await fetch(new URL('api/queues', url), { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      expect((await fetch(new URL('api/queues', url), { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      const basic = Buffer.from(`anyone:${token}`).toString('base64');
      expect((await fetch(url, { headers: { authorization: `Basic ${basic}` } })).status).toBe(200);
      expect(cli.stdout()).not.toContain(token);
    } finally {
      await stop(cli);
    }
  });

  it('with user and password: basic auth, both must match; only one of them set is a usage error', async () => {
    const env = { ROLLOUT_QUEUE_DASHBOARD_USER: 'ops', ROLLOUT_QUEUE_DASHBOARD_PASSWORD: 'pw-77f1' };
    const { cli, url } = await startDashboardCli(['--queue', 'rollouts'], env);
    try {
      const auth = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
      expect((await fetch(new URL('api/queues', url), { headers: auth('ops', 'nope') })).status).toBe(401);
      expect((await fetch(new URL('api/queues', url), { headers: auth('other', 'pw-77f1') })).status).toBe(401);
      expect((await fetch(new URL('api/queues', url), { headers: auth('ops', 'pw-77f1') })).status).toBe(200);
    } finally {
      await stop(cli);
    }
    const half = await runCli(['dashboard', '--port', '0'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix, ROLLOUT_QUEUE_DASHBOARD_USER: 'ops' } });
    expect(half.code).toBe(2);
    expect(half.stderr).toContain('set ROLLOUT_QUEUE_DASHBOARD_PASSWORD too');
  });
});
