import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import { isStoredRendered, RenderedSchema, type Rendered, type StoredRendered } from '../spec/index.js';

/** Default directory of the worker's artifact cache: `<os tmpdir>/rollout-queue-artifacts`. */
export const DEFAULT_ARTIFACT_CACHE_DIR = path.join(os.tmpdir(), 'rollout-queue-artifacts');

const sha256Of = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/**
 * The worker's side of stored artifacts (producer `artifact-storer.ts`): fetches a run's
 * artifact by content hash from `keys.runArtifact(runId, sha256)` once, checks the hash, and
 * keeps it on disk as `<dir>/<sha256>.json` (written to a temp name, then renamed, so a
 * reader never sees half a file), so later rollouts of the run read no artifact from Redis.
 */
export class ArtifactCache {
  constructor(
    private readonly redis: Redis,
    private readonly keys: QueueKeys,
    private readonly dir: string = DEFAULT_ARTIFACT_CACHE_DIR,
  ) {}

  /**
   * The artifact `ref` names, or undefined when Redis no longer holds it (the run was purged
   * or its retention ended) and no cached copy exists.
   * @throws Error when the stored text does not match its hash or is not a `rendered` value
   *   (a foreign writer); the message names the key, never the content.
   */
  async resolve(runId: string, ref: StoredRendered): Promise<Rendered | undefined> {
    const file = path.join(this.dir, `${ref.sha256}.json`);
    const cached = await readFile(file).catch(() => undefined);
    if (cached && sha256Of(cached) === ref.sha256) return this.parse(cached, ref);
    const key = this.keys.runArtifact(runId, ref.sha256);
    const stored = await this.redis.getBuffer(key);
    if (!stored) return undefined;
    if (sha256Of(stored) !== ref.sha256) throw new Error(`artifact ${key} does not match its SHA-256; it was written by something other than the producer`);
    const value = this.parse(stored, ref);
    await mkdir(this.dir, { recursive: true });
    const temp = `${file}.${randomUUID()}.tmp`;
    await writeFile(temp, stored);
    await rename(temp, file);
    return value;
  }

  private parse(bytes: Buffer, ref: StoredRendered): Rendered {
    const parsed = RenderedSchema.safeParse(JSON.parse(bytes.toString('utf8')) as unknown);
    if (!parsed.success || isStoredRendered(parsed.data)) throw new Error(`artifact ${ref.sha256} is not a rendered string or { files }`);
    return parsed.data;
  }
}
