import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueKeys, RUN_FIELDS } from '../../../src/lease/index.js';
import { TEST_PREFIX } from '../../helpers/producer-fixture.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { waitFor } from '../../helpers/wait-for.js';

// Issue 33 item 4 ("one clock"), coordinator side: a run's createdAt is what `purge
// --older-than` compares with Redis TIME (for runs that never recorded their end), so it is
// written from the Redis clock, not from the coordinator host's. The coordinator runs under
// libfaketime 10 min ahead.
const repo = fileURLToPath(new URL('../../../', import.meta.url));
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';
const SKEW_MS = 10 * 60_000;

let redis: TestRedis;
let client: Redis;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-coord-skew-'));
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('a coordinator whose clock is 10 min ahead', () => {
  it('stamps its run record on the Redis clock (createdAt within minutes of Redis TIME, not 10 min ahead)', async () => {
    expect(existsSync(LIBFAKETIME), `install faketime; expected ${LIBFAKETIME}`).toBe(true);
    const queue = `q-skew-${process.pid}`;
    const runId = 'skewed-coordinator';
    let child: ChildProcess | undefined;
    try {
      // No worker: the run stays running with its one job waiting, which is all this needs.
      child = spawn(process.execPath, ['--import', './test/helpers/ts-loader.mjs', 'test/helpers/producer-child.ts'], {
        cwd: repo,
        env: {
          ...process.env, REDIS_URL: redis.url, RQ_QUEUE: queue, RQ_PREFIX: TEST_PREFIX, RQ_RUN_ID: runId, RQ_COUNT: '1', RQ_OUT: path.join(dir, 'out.jsonl'),
          LD_PRELOAD: LIBFAKETIME, FAKETIME: '+10m', FAKETIME_DONT_FAKE_MONOTONIC: '1', DONT_FAKE_MONOTONIC: '1',
        },
        stdio: 'ignore',
      });
      const key = queueKeys(TEST_PREFIX, queue).run(runId);
      await waitFor(async () => (await client.hget(key, RUN_FIELDS.createdAt)) !== null, 'the run record', 60_000);
      const createdAt = Date.parse((await client.hget(key, RUN_FIELDS.createdAt)) as string);
      const [seconds] = await client.time();
      expect(Math.abs(Number(seconds) * 1000 - createdAt)).toBeLessThan(SKEW_MS / 2);
    } finally {
      child?.kill('SIGKILL');
    }
  });
});
