import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../lease/index.js';
import { isStoredRendered, type RolloutSpec } from '../spec/index.js';

/**
 * Smallest `rendered` (as JSON, bytes) stored once per run by content hash; a smaller one
 * travels inline in each job (its reference, about 100 bytes, would not be smaller).
 */
export const STORE_ARTIFACT_MIN_BYTES = 1024;

/**
 * Stores a run's artifacts once (DESIGN.md "Retention"): the JSON text of a large `rendered`
 * goes to `keys.runArtifact(runId, sha256)` (SET NX, listed in `keys.runArtifacts(runId)`) and
 * each job's data carries `{ sha256, bytes }` instead of a full copy. 100 rollouts of a 1 MiB
 * artifact then keep 1 MiB in Redis, not 100 MiB. Workers fetch it by hash (consumer
 * `artifact-cache.ts`). One instance per session: it remembers what it stored already.
 */
export class ArtifactStorer {
  private readonly stored = new Set<string>();
  private last: { json: string; sha256: string } | undefined;

  constructor(private readonly redis: Redis, private readonly keys: QueueKeys) {}

  /**
   * The job data of `spec`: the spec itself, or a copy whose `rendered` is the stored reference
   * (storing the artifact first, so no job can reference a missing one).
   */
  async jobData(spec: RolloutSpec): Promise<RolloutSpec> {
    if (isStoredRendered(spec.rendered)) return spec;
    const json = JSON.stringify(spec.rendered);
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes < STORE_ARTIFACT_MIN_BYTES) return spec;
    // Drafts of one run usually share one artifact: hash its text once.
    const sha256 = this.last?.json === json ? this.last.sha256 : createHash('sha256').update(json, 'utf8').digest('hex');
    this.last = { json, sha256 };
    const key = `${spec.runId}\n${sha256}`;
    if (!this.stored.has(key)) {
      await this.redis
        .multi()
        .set(this.keys.runArtifact(spec.runId, sha256), json, 'NX')
        // A run resumed inside its retention window: the artifact must outlive the new jobs.
        .persist(this.keys.runArtifact(spec.runId, sha256))
        .sadd(this.keys.runArtifacts(spec.runId), sha256)
        .exec();
      this.stored.add(key);
    }
    return { ...spec, rendered: { sha256, bytes } };
  }

  /** Forgets what was stored: Redis lost it (the run's record was made again), so the next job of each artifact stores it again. */
  forget(): void {
    this.stored.clear();
  }

  /** The sha256 of every artifact this storer stored (its session's run), for that run's retention. */
  storedArtifacts(): string[] {
    return [...this.stored].map((key) => key.slice(key.indexOf('\n') + 1));
  }
}
