import { z } from 'zod';
import { findJsonDataIssue, type JsonDataIssue } from './json-data.js';

/**
 * Largest `meta` a draft may carry: 4096 bytes of its JSON text (UTF-8). Meta travels in every
 * job and every Result, so it is a tag (a candidate id, a generation), never a payload: data
 * that is larger stays on the coordinator, keyed by the tag.
 */
export const MAX_META_BYTES = 4096;

/** Deepest nesting accepted in `meta` (objects and arrays): a tag needs few levels. */
export const MAX_META_DEPTH = 8;

/**
 * The first problem that keeps `value` from being a draft's `meta`, or undefined: plain JSON
 * data (string, finite number, boolean, null, array, plain object; no `__proto__` key), at most
 * {@link MAX_META_DEPTH} levels deep and {@link MAX_META_BYTES} bytes as JSON. The message names
 * the path (`meta.candidate.id`) and the fix, never the value.
 */
export function findMetaIssue(value: unknown): JsonDataIssue | undefined {
  const issue = findJsonDataIssue(value, 'meta', { scalarArraysOnly: false, maxDepth: MAX_META_DEPTH });
  if (issue) return issue;
  const json = JSON.stringify(value);
  // A UTF-16 unit is at most 3 UTF-8 bytes: most tags are known small without encoding them.
  const bytes = json.length * 3 <= MAX_META_BYTES ? json.length : new TextEncoder().encode(json).length;
  if (bytes > MAX_META_BYTES) {
    return { path: 'meta', message: `meta is ${bytes} bytes as JSON, over the ${MAX_META_BYTES}-byte limit; keep meta a small tag (candidate id, generation) and keep larger data on the coordinator, keyed by it` };
  }
  return undefined;
}

/**
 * A draft's own tag (`meta`), any small JSON value: stored with the spec and returned untouched on
 * its Result, so a coordinator ties each Result to the candidate that produced it without parsing
 * the lease id. The plane never reads it: it takes no part in the lease id, the evaluation cache's
 * content hash or anything a worker runs. Limits: see {@link findMetaIssue}.
 */
export const MetaSchema = z
  .unknown()
  .superRefine((value, ctx) => {
    const issue = findMetaIssue(value);
    if (issue) ctx.addIssue({ code: 'custom', message: `${issue.path}: ${issue.message}` });
  })
  .meta({
    id: 'Meta',
    description: `The caller's own tag of the draft (small JSON: at most ${MAX_META_BYTES} bytes, ${MAX_META_DEPTH} levels), returned untouched on its Result; never read by the plane.`,
  });
