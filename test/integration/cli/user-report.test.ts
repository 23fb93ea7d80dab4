import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { queueKeys } from '../../../src/lease/index.js';
import { freePort, startRedis, type TestRedis } from '../../helpers/redis.js';
import { BIN, cliHint, killLeftovers, REPO_ROOT, runCli, startCli, uniquePrefix, waitFor, type CliOutcome, type CliProcess } from './cli-process.js';

// The problems a new user reported, each with the exact input that failed.
const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-cli-report-'));
const tasks = path.join(dir, 'tasks.jsonl');
const artifact = path.join(dir, 'solve.js');
let redis: TestRedis;
const served = { queue: 'report-served', prefix: uniquePrefix('rep') };

beforeAll(async () => {
  redis = await startRedis();
  await writeFile(tasks, '{"id":"a","answer":1}\n');
  await writeFile(artifact, 'console.log(1)\n');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await redis.stop();
});

afterEach(async () => {
  expect(await killLeftovers()).toEqual([]);
});

const runArgs = (extra: string[], taskFile = tasks, artifactPath = artifact): string[] => [
  'run', '--tasks', taskFile, '--artifact', artifactPath,
  '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"answer"}',
  ...extra,
];

const keysUnder = async (prefix: string): Promise<string[]> => {
  const client = new Redis(redis.url);
  try {
    return await client.keys(`${prefix}:*`);
  } finally {
    client.disconnect();
  }
};

/** A usage error: exit 2, one line on stderr naming `named`, no run id line, nothing in Redis. */
async function expectUsageError(args: string[], named: string | RegExp, cwd = dir): Promise<CliOutcome> {
  const prefix = uniquePrefix('rep');
  const outcome = await runCli(args, { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix }, cwd });
  expect(outcome.code, outcome.stderr).toBe(2);
  const lines = outcome.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('(add --help'));
  expect(lines, outcome.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(typeof named === 'string' ? new RegExp(named.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')) : named);
  expect(outcome.stderr).not.toMatch(/\n\s+at /);
  expect(outcome.stderr).not.toContain('run id:');
  expect(await keysUnder(prefix)).toEqual([]);
  return outcome;
}

describe('1. --out is checked before Redis is touched', () => {
  it.each([
    ['a path under /proc that cannot be created', '/proc/nope/x.jsonl'],
    ['/dev/full (a character device)', '/dev/full'],
    ['/dev/stdout piped into another process', '/dev/stdout'],
    ['a directory', os.tmpdir()],
    ['a path under a file', 'solve.js/x.jsonl'],
  ])('refuses %s: exit 2, one line naming the path, no spin', async (_label, out) => {
    const outcome = await expectUsageError(runArgs(['--out', out]), `--out ${out}`);
    expect(outcome.stderr).toMatch(/pass a|e\.g\. --out/);
  }, 30_000);

  it('creates missing directories of a good --out and leaves nothing behind when Redis is down', async () => {
    const out = path.join(dir, 'new', 'deeper', 'r.jsonl');
    const outcome = await runCli(runArgs(['--out', out]), { env: { REDIS_URL: 'redis://127.0.0.1:1' }, cwd: dir });
    expect(outcome.code, outcome.stderr).toBe(1);
    expect(existsSync(path.join(dir, 'new'))).toBe(false);
  });

  it('a write error later (file size limit) is fatal, one line, exit 1, no retry loop', async () => {
    const worker: CliProcess = startCli(['worker', '--queue', served.queue, '--name', 'report-worker'], { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: served.prefix } });
    const many = path.join(dir, 'many.jsonl');
    await writeFile(many, Array.from({ length: 30 }, (_, i) => JSON.stringify({ id: `t${i}`, answer: 1 })).join('\n') + '\n');
    const out = path.join(dir, 'limited.jsonl');
    // `ulimit -f 1`: the file may not grow past 1 KiB (node ignores SIGXFSZ, the write fails).
    const args = runArgs(['--queue', served.queue, '--run-id', 'limited', '--out', out], many);
    const child = spawn('sh', ['-c', 'ulimit -f 1; exec "$0" "$@"', process.execPath, BIN, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: served.prefix, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    clearTimeout(timer);
    expect(code, stderr).toBe(1);
    const errors = stderr.split('\n').filter((line) => line.startsWith('error:'));
    expect(errors, stderr).toHaveLength(1);
    expect(errors[0]).toContain(`writing a result to ${out} failed`);
    expect(errors[0]).toContain(`${cliHint({ REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: served.prefix })} resume limited --queue ${served.queue} --out ${out}`);
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(readFileSync(out).length).toBeLessThanOrEqual(1024);
    worker.child.kill('SIGTERM');
    expect((await worker.done).code).toBe(0);
  }, 90_000);
});

describe('2. worker --metrics-port on a taken port', () => {
  it('says which port and the fix in one line, exit 1, before it writes anything (worker and run alike)', async () => {
    const port = await freePort();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(port, resolve));
    const prefix = uniquePrefix('rep');
    try {
      const outcome = await runCli(['worker', '--queue', 'report-port', '--metrics-port', String(port)], {
        env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix },
      });
      expect(outcome.code, outcome.stderr).toBe(1);
      const errors = outcome.stderr.split('\n').filter((line) => line.startsWith('error:'));
      expect(errors).toEqual([expect.stringContaining(`--metrics-port ${port} is already in use`)]);
      expect(outcome.stderr).not.toMatch(/\n\s+at /);
      // Fresh-user report: `run` announced a run id to re-attach to, and both wrote the queue's
      // BullMQ meta key, before failing on the port.
      const run = await runCli(runArgs(['--queue', 'report-port', '--metrics-port', String(port), '--out', path.join(dir, 'port.jsonl')]), { env: { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix } });
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr.split('\n').filter((line) => line.startsWith('error:'))).toEqual([expect.stringContaining(`--metrics-port ${port} is already in use`)]);
      expect(run.stderr).not.toContain('run id:');
      expect(await keysUnder(prefix)).toEqual([]);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  }, 60_000);
});

describe('3. the run id line appears only once Redis answered', () => {
  it('not before a usage error', async () => {
    const outcome = await runCli(runArgs(['--run-config', '{oops']), { env: { REDIS_URL: redis.url } });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).not.toContain('run id:');
  });

  it('not before ECONNREFUSED', async () => {
    const outcome = await runCli(runArgs(['--out', path.join(dir, 'refused.jsonl')]), { env: { REDIS_URL: 'redis://127.0.0.1:1' } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain('ECONNREFUSED');
    expect(outcome.stderr).not.toContain('run id:');
  });

  it('not before WRONGPASS', async () => {
    const url = new URL(redis.url);
    url.username = 'nobody';
    url.password = 'wrong';
    const outcome = await runCli(runArgs(['--out', path.join(dir, 'wrongpass.jsonl')]), { env: { REDIS_URL: url.toString() } });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).not.toContain('run id:');
  });
});

describe('4. a task with an empty id', () => {
  it('is a usage error naming file:line', async () => {
    const file = path.join(dir, 'empty-id.jsonl');
    await writeFile(file, '{"id":"a","answer":1}\n{"id": "", "answer": 2}\n');
    await expectUsageError(runArgs([], file), `${file}:2: task.id is empty; give it a non-empty id or remove it to use the line number`);
  });

  // Fresh-user report: "id": null was refused without saying that leaving it out names the task by its line.
  it('a null id says leaving it out names the task by its line', async () => {
    const file = path.join(dir, 'null-id.jsonl');
    await writeFile(file, '{"id":null,"a":1,"b":1,"answer":1}\n');
    await expectUsageError(runArgs([], file), `${file}:1: task.id: task.id must be a string or a number when present, got null; leave it out and the task is named by its position (its line in a tasks file)`);
  });
});

describe('a task over the task size limit in the middle of the file', () => {
  it('is a usage error naming file:line before anything is enqueued (regression: it stopped the run midway, stranding queued specs)', async () => {
    const file = path.join(dir, 'big-task.jsonl');
    const small = Array.from({ length: 5 }, (_, i) => JSON.stringify({ id: `t${i}`, answer: i }));
    await writeFile(file, [...small, JSON.stringify({ id: 'big8', text: 'x'.repeat(2 * 1024 * 1024) })].join('\n') + '\n');
    await expectUsageError(runArgs([], file), /big-task\.jsonl:6: the task is \d+ bytes as JSON, over the 262144-byte task limit/);
  });
});

describe('5. directory artifacts', () => {
  it('refuses a binary file, naming it', async () => {
    const art = path.join(dir, 'art-bin');
    await mkdir(art, { recursive: true });
    await writeFile(path.join(art, 'main.js'), 'console.log(1)\n');
    await writeFile(path.join(art, 'data.bin'), Buffer.from([0x00, 0x01, 0xff, 0xfe, 0x80, 0x61, 0x62, 0x63]));
    const outcome = await expectUsageError(runArgs([], tasks, art), `${path.join(art, 'data.bin')} is not valid UTF-8`);
    expect(outcome.stderr).toContain('binary files are not supported in rendered.files');
    expect(outcome.stderr).toContain('base64');
  });

  it('refuses a symbolic link, naming the link', async () => {
    const art = path.join(dir, 'art-link');
    await mkdir(art, { recursive: true });
    await writeFile(path.join(art, 'main.js'), 'console.log(1)\n');
    symlinkSync('main.js', path.join(art, 'alias.js'));
    await expectUsageError(runArgs([], tasks, art), `${path.join(art, 'alias.js')} is a symbolic link`);
  });
});

describe('6. a queue without workers', () => {
  it('warns once, and the Ctrl-C hints name the queue', async () => {
    const prefix = uniquePrefix('rep');
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: prefix };
    const run = startCli(runArgs(['--queue', 'nobody-home', '--out', path.join(dir, 'lonely.jsonl')]), { env });
    await waitFor(() => run.stderr().includes('rollout(s) on queue'), 30_000, 'the run to start');
    // Interrupted once its task is enqueued (the hint names resume then; before, the run command).
    const runId = /run id: (\S+)/.exec(run.stderr())?.[1] ?? '';
    const probe = new Redis(redis.url);
    await waitFor(async () => (await probe.hget(queueKeys(prefix, 'nobody-home').run(runId), 'enqueued')) === '1', 30_000, 'its task to be enqueued');
    probe.disconnect();
    run.child.kill('SIGINT');
    const end = await run.done;
    expect(end.code, end.stderr).toBe(130);
    const warning = `no worker is serving queue "nobody-home" (prefix "${prefix}") yet; start one with: ${cliHint(env)} worker --queue nobody-home`;
    expect(end.stderr.split(warning)).toHaveLength(2);
    expect(end.stderr).toContain(`${cliHint(env)} resume ${runId} --queue nobody-home --out `);
    expect(end.stderr).toContain(`${cliHint(env)} cancel ${runId} --queue nobody-home`);
  }, 60_000);
});

describe('7. validator wording names the flag, what is allowed and an example', () => {
  it('--run-id ""', async () => {
    const outcome = await runCli(runArgs(['--run-id', '']));
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).not.toContain('Too small');
    expect(outcome.stderr).toContain('--run-id must be 1 to 200 letters, digits, "_" or "-"');
    expect(outcome.stderr).toContain('e.g. --run-id eval-2026-11-29');
  });

  it('--metrics-port 99999', async () => {
    const outcome = await runCli(['worker', '--metrics-port', '99999']);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toContain('--metrics-port must be a port number from 0 to 65535 (0 picks a free one), got "99999"; e.g. --metrics-port 9464');
  });
});
