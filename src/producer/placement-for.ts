import type { PreparedDraft } from './rollout-draft.js';
import type { PlacementFor } from './producer-options.js';

/**
 * Applies the producer's `placementFor(task)` strategy to a prepared draft whose spec names no
 * `placement` (a spec's own placement wins). Labels must be a plain object of strings (names up
 * to 64, values up to 256 characters, as `spec.placement`); anything else, or a strategy that
 * throws, refuses the draft as a `caller` Result `InvalidSpec` naming `placementFor`.
 */
export function withPlacementFor(draft: PreparedDraft, placementFor: PlacementFor | undefined): PreparedDraft {
  if (!draft.ok || !placementFor || Object.keys(draft.spec.placement).length > 0) return draft;
  let labels: unknown;
  try {
    labels = placementFor(draft.spec.task);
  } catch (err) {
    return refuse(draft, `placementFor(task) threw: ${(err as Error).message}`);
  }
  if (labels === undefined) return draft;
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels)) return refuse(draft, 'placementFor(task) must return an object of string labels or undefined');
  for (const [key, value] of Object.entries(labels)) {
    if (typeof value !== 'string' || key.length > 64 || value.length > 256) {
      return refuse(draft, `placementFor(task) label "${key.slice(0, 64)}" must be a string of at most 256 characters (names at most 64)`);
    }
  }
  return { ...draft, spec: { ...draft.spec, placement: { ...(labels as Record<string, string>) } } };
}

function refuse(draft: Extract<PreparedDraft, { ok: true }>, message: string): PreparedDraft {
  return { ok: false, kind: 'caller', leaseId: draft.leaseId, taskId: draft.taskId, error: { type: 'InvalidSpec', message } };
}
