import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalRedis } from '../../../src/cli/local-redis.js';

// Servers run in parallel (test files, demos, benches): a port picked free can be taken by
// another redis-server before ours binds it, and the ping is then answered by that one. A
// stand-in binary reproduces it: it starts a real redis-server of its own (another pid) on the
// port it is given, daemonized, and never serves itself.
const dir = mkdtempSync(path.join(os.tmpdir(), 'rq-local-redis-'));
const impostor = path.join(dir, 'impostor-redis-server');
writeFileSync(
  impostor,
  `#!/bin/sh\nport=$2\nredis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir '${dir}' --pidfile '${dir}/other-'"$port"'.pid' >/dev/null\nexec sleep 30\n`,
);
chmodSync(impostor, 0o755);

afterAll(() => {
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.pid'))) {
    try {
      process.kill(Number(readFileSync(path.join(dir, file), 'utf8')), 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('startLocalRedis', () => {
  it("refuses a server that answers on its port but is not the process it started (another one's)", async () => {
    await expect(startLocalRedis(impostor)).rejects.toThrow(/another redis-server \(pid \d+\) answers on redis:\/\/127\.0\.0\.1:\d+/);
  });

  it('hands out its own server otherwise', async () => {
    const redis = await startLocalRedis();
    try {
      const info = execFileSync('redis-cli', ['-u', redis.url, 'INFO', 'server']).toString();
      expect(info).toMatch(/^process_id:\d+/m);
    } finally {
      await redis.stop();
    }
  });
});
