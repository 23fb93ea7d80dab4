import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArtifactCache } from '../../../src/consumer/artifact-cache.js';
import { queueKeys } from '../../../src/lease/index.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// The worker's fetch of a stored artifact: by hash from Redis once, then from its disk cache.
let redis: TestRedis;
let client: Redis;
let dir: string;
const keys = queueKeys('rqt', 'artifacts');

/** Stores `rendered` as the producer does; returns its reference. */
async function store(runId: string, rendered: unknown): Promise<{ sha256: string; bytes: number }> {
  const json = JSON.stringify(rendered);
  const sha256 = createHash('sha256').update(json).digest('hex');
  await client.set(keys.runArtifact(runId, sha256), json);
  return { sha256, bytes: Buffer.byteLength(json) };
}

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-artifacts-'));
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('ArtifactCache', () => {
  it('fetches by hash once, then serves the disk copy even after Redis forgot it', async () => {
    const cache = new ArtifactCache(client, keys, dir);
    const ref = await store('r1', { files: { 'main.py': 'print(1)\n'.repeat(200) } });
    expect(await cache.resolve('r1', ref)).toEqual({ files: { 'main.py': 'print(1)\n'.repeat(200) } });
    await client.del(keys.runArtifact('r1', ref.sha256));
    expect(await cache.resolve('r1', ref)).toEqual({ files: { 'main.py': 'print(1)\n'.repeat(200) } });
    expect(await readdir(dir)).toEqual([`${ref.sha256}.json`]);
  });

  it('is undefined when the artifact is gone and not cached, and refuses text that does not match its hash', async () => {
    const cache = new ArtifactCache(client, keys, dir);
    expect(await cache.resolve('r2', { sha256: 'a'.repeat(64), bytes: 3 })).toBeUndefined();
    const ref = await store('r2', 'real artifact');
    await client.set(keys.runArtifact('r2', ref.sha256), JSON.stringify('tampered'));
    await expect(cache.resolve('r2', ref)).rejects.toThrow(/does not match its SHA-256/);
  });

  it('keeps at most maxFiles artifacts on disk', async () => {
    const own = await mkdtemp(path.join(os.tmpdir(), 'rq-artifacts-cap-'));
    try {
      const cache = new ArtifactCache(client, keys, own, { maxFiles: 3, maxBytes: 1 << 30 });
      for (let i = 0; i < 6; i++) await cache.resolve('r3', await store('r3', `artifact ${i}`));
      expect(await readdir(own)).toHaveLength(3);
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  });
});
