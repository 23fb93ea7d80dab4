import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RolloutQueue } from '../../src/producer/index.js';
import { createLogger } from '../../src/platform/logger.js';
import type { Result } from '../../src/spec/index.js';
import { startRedis } from '../helpers/redis.js';
import { fixture } from '../helpers/raw-queue.js';
import { startWorkerProcess } from '../helpers/worker-process.js';

const repo = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ADMIN = 'admin-pass-Qw7';
const PASSWORDS = { WORKER_PASSWORD: 'worker-pass-Lk2', COORDINATOR_PASSWORD: 'coord-pass-Zx9' };

/** The ACL rules exactly as docs/security.md's "Least-privilege Redis ACL" block gives them. */
function documentedAclRules(): string[][] {
  const page = readFileSync(path.join(repo, 'docs', 'security.md'), 'utf8');
  const block = /<!-- doc-example: acl[^>]*-->\s*```redis\n([\s\S]*?)```/.exec(page)?.[1];
  if (!block) throw new Error('docs/security.md has no ACL example block (<!-- doc-example: acl … --> then ```redis)');
  return block
    .trim()
    .split('\n')
    .map((line) => line.split(/\s+/).map((word) => word.replace(/WORKER_PASSWORD|COORDINATOR_PASSWORD/, (name) => PASSWORDS[name as keyof typeof PASSWORDS])));
}

describe('Redis with requirepass and the documented least-privilege ACL users', () => {
  it('workers and coordinators run a whole run with their own users; a wrong password fails clearly without echoing it', async () => {
    const redis = await startRedis({ args: ['--requirepass', ADMIN] });
    const admin = new Redis(redis.url.replace('redis://', `redis://:${ADMIN}@`));
    try {
      for (const rule of documentedAclRules()) expect(await admin.call(...(rule as [string, ...string[]]))).toBe('OK');
      const [host] = redis.url.replace('redis://', '').split('/');
      const workerUrl = `redis://rq-worker:${PASSWORDS.WORKER_PASSWORD}@${host}`;
      const coordinatorUrl = `redis://rq-coordinator:${PASSWORDS.COORDINATOR_PASSWORD}@${host}`;
      const worker = await startWorkerProcess({ redisUrl: workerUrl, queue: 'acl', prefix: 'rq', allow: ['rq-fixtures/*'] });
      const rq = await RolloutQueue.create({ redisUrl: coordinatorUrl, queue: 'acl', prefix: 'rq', logger: createLogger({}, { write: () => true }) });
      try {
        const results: Result[] = [];
        const drafts = Array.from({ length: 5 }, (_, i) => ({ rendered: 'x', task: { id: `t${i}` }, run: fixture('echo'), reward: fixture('constant') }));
        for await (const result of rq.mapRollouts(drafts, { runId: 'acl' })) results.push(result);
        expect(results.map((r) => r.kind)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
        expect((await rq.status('acl')).workers.length).toBeGreaterThan(0);
        expect(worker.output()).not.toMatch(/NOPERM/);
      } finally {
        await rq.close();
        worker.signal('SIGTERM');
        await worker.exited();
      }

      const wrong = 'wrong-pass-Ty5/with-slash';
      for (const args of [['status'], ['worker', '--queue', 'acl']]) {
        const cli = spawnSync(process.execPath, [path.join(repo, 'bin', 'rollout-queue.js'), ...args], {
          env: { ...process.env, REDIS_URL: `redis://rq-worker:${wrong}@${host}` },
          encoding: 'utf8',
          timeout: 30_000,
        });
        const output = cli.stdout + cli.stderr;
        expect(cli.status).toBe(1);
        expect(output).toMatch(/WRONGPASS|credentials/);
        expect(output).toContain('rq-worker:***@');
        expect(output).not.toContain(wrong);
        expect(output).not.toContain('with-slash');
        expect(output).not.toMatch(/\n\s+at /);
      }
    } finally {
      admin.disconnect();
      await redis.stop();
    }
  });
});
