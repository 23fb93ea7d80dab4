import { createHash } from 'node:crypto';
import { isStoredRendered, type Rendered, type RolloutSpec } from '../spec/index.js';
import { PER_ROLLOUT_FIELDS, type RolloutDefinition, type RunMessage } from './child-protocol.js';

/**
 * Fields not in the definition: the per-rollout ones (sent with each run message), and `meta` (a
 * candidate's tag, different from spec to spec, that only the Result carries: the child never needs it).
 */
const NOT_SHARED: ReadonlySet<string> = new Set([...PER_ROLLOUT_FIELDS, 'meta']);

/** Most definition texts whose key is remembered (a worker serves a few runs at a time). */
const MAX_KEYS = 1024;
/** SHA-256 (base64url) of definition texts seen lately: a run's rollouts share one text, hashed once. */
const keys = new Map<string, string>();

/** Longest definition text whose key is remembered, characters (a larger inline artifact is hashed each time: the worker keeps no copy of it). */
const MAX_REMEMBERED_TEXT = 64 * 1024;

/** The SHA-256 of `text`, remembered for the next rollout of the run (a Map lookup instead of a hash object per rollout). */
function contentKey(text: string): string {
  let key = keys.get(text);
  if (key === undefined) {
    key = createHash('sha256').update(text).digest('base64url');
    if (text.length > MAX_REMEMBERED_TEXT) return key;
    if (keys.size >= MAX_KEYS) keys.clear();
    keys.set(text, key);
  }
  return key;
}

/**
 * A spec split into what its run shares (the {@link RolloutDefinition}, sent to a child once) and
 * what is its own (task and lease, sent with every rollout).
 */
export interface SplitSpec {
  /**
   * Content key of the definition: SHA-256 of its JSON text with a stored artifact written as its
   * reference (`{ sha256, bytes }`, already a content hash: the artifact is neither read nor hashed
   * again) and without secret values (their names are in `sandbox.env`; a worker's values do not
   * change while it runs). Rollouts of other runs with the same artifact, Refs and options share it.
   */
  readonly key: string;
  /** What the definition costs a child's cache, bytes: its JSON text plus a stored artifact's size. */
  readonly bytes: number;
  /** The definition, given the artifact itself when the spec names a stored one (see {@link needsArtifact}). */
  definition(rendered?: Rendered): RolloutDefinition;
  /** True when {@link definition} needs the stored artifact fetched first. */
  readonly needsArtifact: boolean;
  /** The rollout's own part of a run message. */
  readonly own: Pick<RunMessage, 'leaseId' | 'runId' | 'runAttemptId' | 'task' | 'traceparent'>;
}

/**
 * Splits a parsed spec for a child (the worker's side of "a run's constant part reaches a child
 * once, by content hash"). Costs one JSON text and one SHA-256 of the shared fields per rollout,
 * where sending them cost their serialization and the child's parse of them every time.
 * @param secrets values of `sandbox.env` from the worker's environment.
 */
export function splitSpec(spec: RolloutSpec, secrets: Readonly<Record<string, string>>): SplitSpec {
  const shared: Record<string, unknown> = {};
  for (const field of Object.keys(spec)) if (!NOT_SHARED.has(field)) shared[field] = spec[field as keyof RolloutSpec];
  const text = JSON.stringify(shared);
  const stored = isStoredRendered(spec.rendered) ? spec.rendered : undefined;
  return {
    key: contentKey(text),
    bytes: text.length + (stored?.bytes ?? 0),
    needsArtifact: stored !== undefined,
    definition: (rendered) => {
      if (stored && rendered === undefined) throw new Error(`the definition of ${spec.leaseId} needs its stored artifact ${stored.sha256}`);
      return { ...shared, ...(rendered !== undefined ? { rendered } : {}), secrets } as RolloutDefinition;
    },
    own: { leaseId: spec.leaseId, runId: spec.runId, runAttemptId: spec.runAttemptId, task: spec.task, ...(spec.traceparent !== undefined ? { traceparent: spec.traceparent } : {}) },
  };
}
