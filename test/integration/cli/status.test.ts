import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { bullMetaKey, queueKeys, RUN_FIELDS } from '../../../src/lease/index.js';
import { freePort, startRedis, type TestRedis } from '../../helpers/redis.js';
import { cliHint, killLeftovers, runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';

// `status` and `cancel` against real Redis, and the one-line errors for a Redis that cannot be used.
let redis: TestRedis;
let guarded: TestRedis;
const PASSWORD = 'hunter2-never-printed';

beforeAll(async () => {
  redis = await startRedis();
  guarded = await startRedis({ private: true, args: ['--requirepass', PASSWORD] });
});

afterAll(async () => {
  await guarded?.stop();
  await redis?.stop();
});

afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

describe('status on an empty queue', () => {
  it('prints zero jobs by state and no workers, exit 0', async () => {
    const outcome = await runCli(['status'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('st') } });
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toContain('Queue "rollouts"');
    expect(outcome.stdout).toMatch(/waiting\s+0/);
    expect(outcome.stdout).toMatch(/active\s+0/);
    expect(outcome.stdout).toContain('Workers connected: 0');
  });

  // Fresh-user report: `status --queue demo-…` said "start one with `… worker`"; followed as
  // printed, that worker served the default queue and the run never moved.
  it('of another queue, its no-worker hint names that queue', async () => {
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('st') };
    const outcome = await runCli(['status', '--queue', 'demo-x'], { env });
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toContain(`none: start one with \`${cliHint(env)} worker --queue demo-x\``);
  });

  it('--json gives the same as data', async () => {
    const outcome = await runCli(['status', '--json', '--queue', 'other'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('st') } });
    expect(outcome.code, outcome.stderr).toBe(0);
    const status = JSON.parse(outcome.stdout) as { queue: string; counts: Record<string, number>; workers: unknown[]; run: unknown; runs: unknown[] };
    expect(status.queue).toBe('other');
    expect(Object.values(status.counts).every((count) => count === 0)).toBe(true);
    expect(status.counts).toHaveProperty('waiting', 0);
    expect(status.workers).toEqual([]);
    expect(status.run).toBeNull();
    expect(status.runs).toEqual([]);
  });

  // Found while testing the demo's clean-up: `status --queue typo` wrote BullMQ's meta key of
  // "typo" (a queue the dashboard then listed) and showed an empty queue like any other.
  it('of a queue nothing used, says so and names the used ones, and writes no key; a run id on it gets the same (status, cancel, resume, purge)', async () => {
    const prefix = uniquePrefix('st');
    const probe = new Redis(redis.url);
    try {
      await probe.hset(`${prefix}:arith:meta`, 'version', 'bullmq:6.7.0');
      const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
      const outcome = await runCli(['status', '--queue', 'arithh'], { env });
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.stdout).toContain(`nothing has used queue "arithh" under prefix "${prefix}" yet (no job, run or worker): queues used there: arith; pass --queue NAME`);
      const json = JSON.parse((await runCli(['status', '--json', '--queue', 'arithh'], { env })).stdout) as { queueUsed?: boolean; otherQueues?: string[] };
      expect(json).toMatchObject({ queueUsed: false, otherQueues: ['arith'] });
      // Fresh-user report: with the used queues named, the no-worker hint said to start a worker on the typo.
      expect(outcome.stdout).not.toContain('worker --queue arithh');
      // Fresh-user reports: `resume` of a misspelt queue wrote its meta key (status then took it for
      // a used queue), and a run id on a misspelt queue got only "check the id, --queue …".
      const unknownRun = `error: no run "r-1" on queue "arithh" (prefix "${prefix}"); nothing has used queue "arithh" under prefix "${prefix}" (queues used there: arith); check --queue and ROLLOUT_QUEUE_PREFIX`;
      for (const args of [['status', 'r-1'], ['cancel', 'r-1'], ['resume', 'r-1', '--out', path.join(os.tmpdir(), `rq-resume-${prefix}.jsonl`)], ['purge', 'r-1']]) {
        const refused = await runCli([...args, '--queue', 'arithh'], { env });
        expect(refused.code, args[0]).toBe(1);
        expect(refused.stderr.trim().split('\n').at(-1), args[0]).toBe(unknownRun);
      }
      expect(await probe.keys(`${prefix}:arithh*`)).toEqual([]);
      const used = await runCli(['status', '--queue', 'arith'], { env });
      expect(used.stdout).not.toContain('nothing has used queue');
    } finally {
      probe.disconnect();
    }
  });

  // Fresh-user report: a misspelt ROLLOUT_QUEUE_PREFIX got "no queue there was used yet" and nothing more.
  it('of a prefix nothing used, names the prefixes used in the database and their queues', async () => {
    const prefix = uniquePrefix('st');
    // A database of its own: the prefixes named are every one with a queue in it.
    const url = new URL(redis.url);
    url.pathname = '/9';
    const probe = new Redis(url.toString());
    try {
      await probe.hset(`${prefix}:arith:meta`, 'version', 'bullmq:6.7.0');
      const env = { REDIS_URL: url.toString(), ROLLOUT_QUEUE_PREFIX: `${prefix}x` };
      const outcome = await runCli(['status', '--queue', 'arith'], { env });
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.stdout).toContain(
        `nothing has used queue "arith" under prefix "${prefix}x" yet (no job, run or worker): no queue there was used yet; prefixes used in this Redis: "${prefix}" (arith); set ROLLOUT_QUEUE_PREFIX to one of them\n`,
      );
      const json = JSON.parse((await runCli(['status', '--json', '--queue', 'arith'], { env })).stdout) as Record<string, unknown>;
      expect(json).toMatchObject({ queueUsed: false, otherQueues: [], otherPrefixes: { [prefix]: ['arith'] } });
      const unknownRun = await runCli(['status', 'r-1', '--queue', 'arith'], { env });
      expect(unknownRun.stderr).toContain(`(no queue there was used yet; prefixes used in this Redis: "${prefix}" (arith); set ROLLOUT_QUEUE_PREFIX to one of them)`);
    } finally {
      await probe.del(`${prefix}:arith:meta`);
      probe.disconnect();
    }
  });

  // Fresh-user report: `cancel noworker1 --queue emptyq` on a Redis with 60+ queues under
  // another prefix printed every queue name on one line.
  it('of a Redis with many queues, names a few of them and counts the rest', async () => {
    const prefix = uniquePrefix('st');
    // A database of its own: nothing but these queues is in it.
    const url = new URL(redis.url);
    url.pathname = '/10';
    const probe = new Redis(url.toString());
    const queues = Array.from({ length: 62 }, (_, i) => `bench-${String(i).padStart(2, '0')}`);
    try {
      await Promise.all(queues.map((queue) => probe.hset(bullMetaKey(prefix, queue), 'version', 'bullmq:6.7.0')));
      const elsewhere = await runCli(['cancel', 'noworker1', '--queue', 'emptyq'], { env: { REDIS_URL: url.toString(), ROLLOUT_QUEUE_PREFIX: `${prefix}x` } });
      expect(elsewhere.code).toBe(1);
      expect(elsewhere.stderr.trim()).toBe(
        `error: no run "noworker1" on queue "emptyq" (prefix "${prefix}x"); nothing has used queue "emptyq" under prefix "${prefix}x" ` +
          `(no queue there was used yet; prefixes used in this Redis: "${prefix}" (bench-00, bench-01, bench-02, bench-03, bench-04 and 57 more); set ROLLOUT_QUEUE_PREFIX to one of them); check --queue and ROLLOUT_QUEUE_PREFIX`,
      );
      const here = await runCli(['cancel', 'noworker1', '--queue', 'emptyq'], { env: { REDIS_URL: url.toString(), ROLLOUT_QUEUE_PREFIX: prefix } });
      expect(here.code).toBe(1);
      expect(here.stderr).toContain('(queues used there: bench-00, bench-01, bench-02, bench-03, bench-04 and 57 more)');
      expect(here.stderr).not.toContain('bench-05');
    } finally {
      await probe.flushdb();
      probe.disconnect();
    }
  });

  // Fresh-user report: under REDIS_URL=…/3, status listed the workers of the same queue in
  // database 0 (CLIENT LIST shows every database's clients; BullMQ does not filter).
  it("lists only the workers connected to REDIS_URL's database", async () => {
    const prefix = uniquePrefix('st');
    const other = new URL(redis.url);
    other.pathname = '/3';
    const worker = startCli(['worker', '--concurrency', '1', '--name', 'db0-worker'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
    try {
      await waitFor(async () => (await runCli(['status'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } })).stdout.includes('db0-worker'), 30_000, 'the worker in database 0');
      const outcome = await runCli(['status'], { env: { REDIS_URL: other.toString(), ROLLOUT_QUEUE_PREFIX: prefix } });
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.stdout).toContain('Workers connected: 0');
      expect(outcome.stdout).not.toContain('db0-worker');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
    }
  });

  it('an unknown run exits 1 naming it', async () => {
    const outcome = await runCli(['status', 'no-such-run'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('st') } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('no run "no-such-run"');
  });

  it('cancel of an unknown run exits 1 naming it', async () => {
    const outcome = await runCli(['cancel', 'no-such-run'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('st') } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('no run "no-such-run"');
  });
});

describe('cancel of a run that already ended', () => {
  // Regression (fresh-user report): it printed "cancelled run …" and left status "completed".
  it('says it is already completed and changes nothing, exit 0', async () => {
    const prefix = uniquePrefix('st');
    const keys = queueKeys(prefix, 'rollouts');
    const client = new Redis(redis.url);
    try {
      await client.hset(keys.run('done1'), RUN_FIELDS.status, 'completed', RUN_FIELDS.specCount, '1');
      await client.sadd(keys.runs(), 'done1');
      const outcome = await runCli(['cancel', 'done1'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.stdout).toContain('run done1 is already completed: nothing to cancel');
      expect(await client.hget(keys.run('done1'), RUN_FIELDS.status)).toBe('completed');
    } finally {
      client.disconnect();
    }
  });
});

describe('a Redis that cannot be used gives one clear line, never the password', () => {
  it('unreachable: names the redacted address and the fix', async () => {
    const port = await freePort();
    const outcome = await runCli(['status'], { env: { REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${port}` } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain(`could not connect to Redis at redis://:***@127.0.0.1:${port} (ECONNREFUSED)`);
    expect(outcome.stderr).toContain('REDIS_URL');
    expect(outcome.stderr.trim().split('\n')).toHaveLength(1);
    expect(outcome.stdout + outcome.stderr).not.toContain(PASSWORD);
  });

  // Regression (fresh-user report): a host name that does not resolve said "Start Redis".
  it('a host name that does not resolve: says to check the host, not to start Redis', async () => {
    const outcome = await runCli(['status'], { env: { REDIS_URL: `redis://:${PASSWORD}@no-such-host.invalid:6379` } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('could not connect to Redis at redis://:***@no-such-host.invalid:6379: the host name "no-such-host.invalid" does not resolve (ENOTFOUND)');
    expect(outcome.stderr).toContain('Check the host in REDIS_URL');
    expect(outcome.stderr).not.toContain('Start Redis');
    expect(outcome.stderr.trim().split('\n')).toHaveLength(1);
    expect(outcome.stdout + outcome.stderr).not.toContain(PASSWORD);
  });

  // Fresh-user report: rediss:// to a plain Redis said "Start Redis" (it runs) after Node's DEP0123 warning.
  it('rediss:// to a Redis without TLS: says the TLS handshake failed and names redis://', async () => {
    const outcome = await runCli(['status'], { env: { REDIS_URL: redis.url.replace(/^redis:/, 'rediss:') } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('could not open a TLS connection to Redis at rediss://');
    expect(outcome.stderr).toContain('for a plain Redis use redis://');
    expect(outcome.stderr).not.toContain('Start Redis');
    expect(outcome.stderr).not.toContain('DEP0123');
  });

  it('wrong password: says the credentials were refused', async () => {
    const url = guarded.url.replace('redis://', 'redis://:wrong-password-also-secret@');
    const outcome = await runCli(['status'], { env: { REDIS_URL: url } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('refused the credentials');
    expect(outcome.stderr).toContain('redis://:***@127.0.0.1');
    expect(outcome.stdout + outcome.stderr).not.toContain('wrong-password-also-secret');
    expect(outcome.stderr).toContain('Check the user and password in REDIS_URL');
  });

  // Fresh-user report (helper-32): a hint pasted as printed (REDIS_URL='redis://:***@…') got only
  // "refused the credentials".
  it('the *** a hint prints for the password: says to put the real password there', async () => {
    const outcome = await runCli(['status'], { env: { REDIS_URL: guarded.url.replace('redis://', 'redis://:***@') } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('refused the credentials (WRONGPASS). The password in REDIS_URL is ***, which this CLI prints in place of a password: put the real one there');
  });

  // Fresh-user report: REDIS_URL=…/99 ran everything in database 0 (ioredis logs the refused
  // SELECT and goes on), and `status` under /3 listed database 0's workers. A wrong REDIS_URL is
  // a usage error (exit 2, docs/cli.md); it exited 1.
  it('a database the server does not have: names it and the range it has, exit 2, for status and worker alike', async () => {
    const url = `${guarded.url.replace('redis://', `redis://:${PASSWORD}@`)}/99`;
    for (const args of [['status'], ['worker', '--concurrency', '1']]) {
      const outcome = await runCli(args, { env: { REDIS_URL: url } });
      expect(outcome.code, args[0]).toBe(2);
      expect(outcome.stderr).toContain(`Redis at redis://:***@${guarded.url.slice('redis://'.length)}/99 has no database 99 (it has 16: 0 to 15`);
      expect(outcome.stdout + outcome.stderr).not.toContain(PASSWORD);
    }
  });

  it('no password where one is needed: says to put it in REDIS_URL', async () => {
    const outcome = await runCli(['status'], { env: { REDIS_URL: guarded.url } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('requires a password');
  });

  it('the right password works', async () => {
    const url = guarded.url.replace('redis://', `redis://:${PASSWORD}@`);
    const outcome = await runCli(['status'], { env: { REDIS_URL: url } });
    expect(outcome.code, outcome.stderr).toBe(0);
    expect(outcome.stdout).toContain('redis://:***@127.0.0.1');
    expect(outcome.stdout + outcome.stderr).not.toContain(PASSWORD);
  });

  it('a REDIS_URL that is not redis:// is a usage error', async () => {
    const outcome = await runCli(['status'], { env: { REDIS_URL: 'http://127.0.0.1:6379' } });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain('redis://');
  });
});

// Fresh-user report: Redis restarted empty mid-run, and the coordinator's acknowledgements then
// counted into a run record that was no longer there. status showed that hash as a running run
// with a resume hint; resume and purge said there was no such run, and cancel printed a stack trace.
describe('a run record Redis lost, with counters written after', () => {
  it('is no run for status and cancel alike: one line naming the id, no stack trace', async () => {
    const prefix = uniquePrefix('gh');
    const client = new Redis(redis.url);
    try {
      const keys = queueKeys(prefix, 'rollouts');
      await client.hset(keys.run('rr'), RUN_FIELDS.kind('infrastructure'), '52', RUN_FIELDS.enqueued, '60');
      const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
      for (const args of [['status', 'rr'], ['cancel', 'rr']]) {
        const outcome = await runCli(args, { env });
        expect(outcome.code, outcome.stdout + outcome.stderr).toBe(1);
        expect(outcome.stderr.trim()).toBe(`error: no run "rr" on queue "rollouts" (prefix "${prefix}"); check the id, --queue and ROLLOUT_QUEUE_PREFIX (${cliHint(env)} status lists the runs)`);
      }
      // Fresh-user report: a run on another queue of the prefix was only "not found"; it is named now.
      const evals = queueKeys(prefix, 'evals');
      await client.hset(evals.run('q1'), RUN_FIELDS.status, 'running', RUN_FIELDS.runAttemptId, 'a1');
      await client.hset(bullMetaKey(prefix, 'evals'), 'opts.maxLenEvents', '10000');
      // A results file holding its Results made resume say Redis had lost the run (helper-28).
      const held = path.join(os.tmpdir(), `rq-status-q1-${prefix}.jsonl`);
      writeFileSync(held, `${JSON.stringify({ leaseId: 'q1.t0', runId: 'q1', taskId: 't0', kind: 'ok' })}\n`);
      try {
        for (const args of [['status', 'q1'], ['resume', 'q1', '--out', 'q1.jsonl'], ['resume', 'q1', '--out', held], ['cancel', 'q1']]) {
          const outcome = await runCli(args, { env });
          expect(outcome.stderr.trim(), args.join(' ')).toBe(`error: no run "q1" on queue "rollouts" (prefix "${prefix}"); it is on queue "evals": add --queue evals`);
        }
      } finally {
        rmSync(held, { force: true });
      }
    } finally {
      client.disconnect();
    }
  });
});

// Fresh-user report: after its coordinator died while enqueuing, status suggested `resume`,
// which collects what was enqueued and then refuses (specs never enqueued); the run command
// enqueues the rest.
describe('a running run whose coordinator stopped while enqueuing', () => {
  it('points at the run command again, with the run id and its results file, not at resume', async () => {
    const prefix = uniquePrefix('pe');
    const client = new Redis(redis.url);
    try {
      const keys = queueKeys(prefix, 'rollouts');
      await client.hset(keys.run('half'), RUN_FIELDS.status, 'running', RUN_FIELDS.runAttemptId, 'a1', RUN_FIELDS.specCount, '10', RUN_FIELDS.enqueued, '4', RUN_FIELDS.coordinatorNote, '/data/half.jsonl');
      await client.sadd(keys.runs(), 'half');
      const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
      const outcome = await runCli(['status', 'half'], { env });
      expect(outcome.code, outcome.stderr).toBe(0);
      expect(outcome.stdout).toContain(`no coordinator is delivering it, and only 4 of its 10 specs were enqueued (its run command stopped while enqueuing); run the same \`${cliHint(env)} run …\` command again with --run-id half --out /data/half.jsonl`);
      expect(outcome.stdout).not.toContain(`${cliHint(env)} resume`);
    } finally {
      client.disconnect();
    }
  });
});

// Fresh-user report: `resume` of such a run printed "Run dbl1: 550 of 3000 result(s), failed"
// though nothing failed and status said running.
describe('resume of a run whose specs were not all enqueued', () => {
  it('calls it incomplete, not failed, and names the run command that finishes it', async () => {
    const prefix = uniquePrefix('pe');
    const client = new Redis(redis.url);
    try {
      const keys = queueKeys(prefix, 'rollouts');
      await client.hset(keys.run('part'), RUN_FIELDS.status, 'running', RUN_FIELDS.runAttemptId, 'a1', RUN_FIELDS.specCount, '10', RUN_FIELDS.enqueued, '0');
      await client.sadd(keys.runs(), 'part');
      const out = path.join(os.tmpdir(), `rq-part-${prefix}.jsonl`);
      const outcome = await runCli(['resume', 'part', '--out', out], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
      expect(outcome.code, outcome.stderr).toBe(1);
      expect(outcome.stdout).toContain('Run part: 0 of 10 result(s), incomplete');
      expect(outcome.stdout).not.toContain('failed');
      expect(outcome.stderr).toContain('10 of its specs were never enqueued');
    } finally {
      client.disconnect();
    }
  });
});

// Fresh-user report: for the seconds after its `run` was killed with SIGKILL (until the
// coordinator lease lapses), status showed the run as delivered, with no hint.
describe('a running run whose coordinator on this host was killed', () => {
  it('says the coordinator is gone and gives the resume hint; a live holder gets neither', async () => {
    const prefix = uniquePrefix('cg');
    const client = new Redis(redis.url);
    try {
      const keys = queueKeys(prefix, 'rollouts');
      const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
      const dead = spawn(process.execPath, ['-e', '0']);
      const deadPid = dead.pid as number;
      await new Promise((resolve) => dead.once('exit', resolve));
      for (const [runId, pid] of [['gone', deadPid], ['live', process.pid]] as const) {
        await client.hset(keys.run(runId), RUN_FIELDS.status, 'running', RUN_FIELDS.runAttemptId, 'a1', RUN_FIELDS.specCount, '3', RUN_FIELDS.enqueued, '3', RUN_FIELDS.coordinatorNote, `/data/${runId}.jsonl`);
        await client.set(keys.runCoordinator(runId), JSON.stringify({ token: 't', pid, host: os.hostname() }), 'PX', 60_000);
      }
      const gone = await runCli(['status', 'gone'], { env });
      expect(gone.code, gone.stderr).toBe(0);
      expect(gone.stdout).toContain(`its coordinator (pid ${deadPid} on this host) is gone; its lease lapses within 6 s`);
      expect(gone.stdout).toContain(`${cliHint(env)} resume gone --out /data/gone.jsonl`);
      const live = await runCli(['status', 'live'], { env });
      expect(live.code, live.stderr).toBe(0);
      expect(live.stdout).not.toContain('is gone');
      expect(live.stdout).not.toContain(`${cliHint(env)} resume`);
    } finally {
      client.disconnect();
    }
  });
});
