import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { redisScript } from '../platform/redis-script.js';
import type { QueueKeys } from '../lease/index.js';
import type { Result } from '../spec/index.js';

/** Where a run of the runs API stands, as the gateway records it. */
export type RunLogState = 'running' | 'completed' | 'stopped' | 'cancelled' | 'failed';

/** States after which no Result is appended any more (until a client posts the run again). */
export const ENDED_STATES: ReadonlySet<RunLogState> = new Set(['completed', 'stopped', 'cancelled', 'failed']);

// Appends a Result once per lease: HSETNX of the lease's mark decides, so a Result yielded again
// after a gateway restart (delivered to the log, not yet acknowledged to the producer) is not
// listed twice. KEYS: gatewayRun, gatewayResults. ARGV: mark field, Result JSON. Returns LLEN.
const APPEND = redisScript('rqGatewayAppend', `
if redis.call('HSETNX', KEYS[1], ARGV[1], '1') == 1 then redis.call('RPUSH', KEYS[2], ARGV[2]) end
return redis.call('LLEN', KEYS[2])`, 2);

// Records the fingerprint of the drafts a run is posted with, the first time (HSETNX), and
// returns the one recorded. KEYS: gatewayRun. ARGV: field, fingerprint.
const CLAIM_DRAFTS = redisScript('rqGatewayClaimDrafts', `
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])`, 1);

/** The field of `keys.gatewayRun` holding the sha256 of the canonical JSON of the run's drafts. */
const DRAFTS_FIELD = 'draftsSha256';

/** A run's state and the length of its Result list. */
export interface RunLogHead {
  readonly state: RunLogState | null;
  readonly error: string | null;
  readonly count: number;
  readonly ackedThrough: number;
}

/**
 * The durable, ordered Result list of a run of the runs API (`keys.gatewayResults`) plus its
 * state (`keys.gatewayRun`): what `GET /runs/ID/results?after=N` streams, so a client that
 * reconnects (or a gateway that restarted) picks up at a cursor. `changed` fires in-process on
 * every append or state change.
 */
export class RunLog {
  readonly changed = new EventEmitter();

  constructor(private readonly redis: Redis, private readonly keys: QueueKeys) {
    this.changed.setMaxListeners(0);
  }

  /** Lists a Result unless its lease is listed already; returns the list length. */
  async append(runId: string, result: Result): Promise<number> {
    const count = Number(await APPEND.run(this.redis, [this.keys.gatewayRun(runId), this.keys.gatewayResults(runId)], [`l:${result.leaseId}`, JSON.stringify(result)]));
    this.changed.emit(runId);
    return count;
  }

  /**
   * Records `fingerprint` (hex sha256 of the drafts' canonical JSON) as the run's drafts unless
   * the run was posted before; returns the fingerprint recorded, which differs from `fingerprint`
   * when it was posted with other drafts.
   */
  async claimDrafts(runId: string, fingerprint: string): Promise<string> {
    return String(await CLAIM_DRAFTS.run(this.redis, [this.keys.gatewayRun(runId)], [DRAFTS_FIELD, fingerprint]));
  }

  /** True while a coordinator session (a gateway's pump, here or elsewhere) holds the run's coordinator lease (`keys.runCoordinator`). */
  async delivering(runId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.runCoordinator(runId))) === 1;
  }

  async setState(runId: string, state: RunLogState, error: string | null = null): Promise<void> {
    await this.redis.hset(this.keys.gatewayRun(runId), 'state', state, 'error', error ?? '');
    this.changed.emit(runId);
  }

  /** Records the client's cursor (the highest `after` seen). */
  async acknowledge(runId: string, after: number): Promise<void> {
    const key = this.keys.gatewayRun(runId);
    const current = Number((await this.redis.hget(key, 'ackedThrough')) ?? 0);
    if (after > current) await this.redis.hset(key, 'ackedThrough', String(after));
  }

  async head(runId: string): Promise<RunLogHead | undefined> {
    const [[, fields], [, count]] = (await this.redis.multi().hmget(this.keys.gatewayRun(runId), 'state', 'error', 'ackedThrough').llen(this.keys.gatewayResults(runId)).exec()) as [[unknown, (string | null)[]], [unknown, number]];
    const [state, error, acked] = fields;
    if (state === null || state === undefined) return undefined;
    return { state: state as RunLogState, error: error || null, count, ackedThrough: Number(acked ?? 0) };
  }

  /** Result lines `from` (0-based) to the end, as JSON strings. */
  async lines(runId: string, from: number): Promise<string[]> {
    return this.redis.lrange(this.keys.gatewayResults(runId), from, -1);
  }
}
