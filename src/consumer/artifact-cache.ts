import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import { isStoredRendered, RenderedSchema, type Rendered, type StoredRendered } from '../spec/index.js';

/** Default directory of the worker's artifact cache: `<os tmpdir>/rollout-queue-artifacts`. */
export const DEFAULT_ARTIFACT_CACHE_DIR = path.join(os.tmpdir(), 'rollout-queue-artifacts');

/** The cache keeps at most this many artifacts; the least recently written go first. */
export const MAX_CACHED_ARTIFACTS = 128;
/** …and at most this many bytes of them. */
export const MAX_CACHED_BYTES = 512 * 1024 * 1024;

const sha256Of = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/**
 * The worker's side of stored artifacts (producer `artifact-storer.ts`): fetches a run's
 * artifact by content hash from `keys.runArtifact(runId, sha256)` once, checks the hash, and
 * keeps it on disk as `<dir>/<sha256>.json` (written to a temp name, then renamed, so a
 * reader never sees half a file), so later rollouts of the run read no artifact from Redis.
 * The directory is bounded ({@link MAX_CACHED_ARTIFACTS}, {@link MAX_CACHED_BYTES}): after each
 * write the oldest files go (a training loop makes a new artifact every step).
 */
export class ArtifactCache {
  constructor(
    private readonly redis: Redis,
    private readonly keys: QueueKeys,
    private readonly dir: string = DEFAULT_ARTIFACT_CACHE_DIR,
    private readonly limits: { readonly maxFiles: number; readonly maxBytes: number } = { maxFiles: MAX_CACHED_ARTIFACTS, maxBytes: MAX_CACHED_BYTES },
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
    await this.prune().catch(() => undefined);
    return value;
  }

  /** Removes the oldest cached artifacts past the count and byte bounds (best effort: another worker may prune too). */
  private async prune(): Promise<void> {
    const names = (await readdir(this.dir)).filter((name) => name.endsWith('.json'));
    if (names.length <= 1) return;
    const files = await Promise.all(names.map(async (name) => ({ path: path.join(this.dir, name), info: await stat(path.join(this.dir, name)) })));
    files.sort((a, b) => b.info.mtimeMs - a.info.mtimeMs);
    let bytes = 0;
    for (const [i, { path: file, info }] of files.entries()) {
      bytes += info.size;
      if (i >= this.limits.maxFiles || (i > 0 && bytes > this.limits.maxBytes)) await unlink(file).catch(() => undefined);
    }
  }

  private parse(bytes: Buffer, ref: StoredRendered): Rendered {
    const parsed = RenderedSchema.safeParse(JSON.parse(bytes.toString('utf8')) as unknown);
    if (!parsed.success || isStoredRendered(parsed.data)) throw new Error(`artifact ${ref.sha256} is not a rendered string or { files }`);
    return parsed.data;
  }
}
