import { createHash } from 'node:crypto';

/** Label a spec's `sandbox.fingerprint` becomes in its placement: it waits for a worker of that fingerprint. */
export const FINGERPRINT_LABEL = 'fingerprint';

/** Labels of a placement or a worker: label name → value (`{ region: 'eu-west', gpu: 'h100' }`). */
export type PlacementLabels = Readonly<Record<string, string>>;

/** What decides where a spec may run (the wire fields it reads). */
export interface PlacedSpec {
  readonly placement?: Readonly<Record<string, string>>;
  readonly sandbox?: { readonly fingerprint?: string | undefined };
}

/**
 * The labels a worker must have to take `spec`: its `placement`, plus
 * `fingerprint=<sandbox.fingerprint>` when it names one (a fingerprint is a placement label,
 * so a spec naming one waits for such a worker and never runs elsewhere). A `placement.fingerprint`
 * that disagrees with `sandbox.fingerprint` loses to the latter.
 */
export function effectivePlacement(spec: PlacedSpec): PlacementLabels {
  const labels: Record<string, string> = { ...(spec.placement ?? {}) };
  if (spec.sandbox?.fingerprint !== undefined) labels[FINGERPRINT_LABEL] = spec.sandbox.fingerprint;
  return labels;
}

/** The JSON stored in `keys.placements()` for a placement and class (labels in canonical order). */
export function placementEntryJson(labels: PlacementLabels, leaseClass: LeaseClass): string {
  return `{"labels":${canonicalPlacement(labels)},"class":${JSON.stringify(leaseClass)}}`;
}

/** The canonical JSON of `labels`: keys sorted, so equal placements have one text (and one queue). */
export function canonicalPlacement(labels: PlacementLabels): string {
  return JSON.stringify(Object.fromEntries(Object.keys(labels).sort().map((key) => [key, labels[key]])));
}

/** Spec `class`: evaluations get queues of their own (own worker concurrency and priority). */
export type LeaseClass = 'rollout' | 'evaluation';

/**
 * The BullMQ queue of a placement and class: `base` itself for a rollout without labels, else
 * `<base>--p-<first 16 hex of SHA-256(canonical JSON)>` (rollouts) or `<base>--e` /
 * `<base>--e-<hash>` (evaluations), so every producer derives the same name and it stays within
 * the queue-name alphabet whatever the labels hold.
 */
export function placementQueueName(base: string, labels: PlacementLabels, leaseClass: LeaseClass = 'rollout'): string {
  const tag = leaseClass === 'evaluation' ? 'e' : 'p';
  if (Object.keys(labels).length === 0) return leaseClass === 'evaluation' ? `${base}--e` : base;
  return `${base}--${tag}-${createHash('sha256').update(canonicalPlacement(labels)).digest('hex').slice(0, 16)}`;
}

/** One entry of `keys.placements()`: what a worker needs to decide whether to serve the queue. */
export interface PlacementEntry {
  readonly labels: PlacementLabels;
  readonly class: LeaseClass;
}

/** Parses an entry of `keys.placements()`; undefined for anything malformed (ignored by workers). */
export function parsePlacementEntry(json: string): PlacementEntry | undefined {
  try {
    const value = JSON.parse(json) as { labels?: unknown; class?: unknown };
    if (!value || typeof value.labels !== 'object' || value.labels === null) return undefined;
    const labels = Object.fromEntries(Object.entries(value.labels).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
    return { labels, class: value.class === 'evaluation' ? 'evaluation' : 'rollout' };
  } catch {
    return undefined;
  }
}

/** True when a worker with `workerLabels` may take a lease whose placement is `placement`: every label equal. */
export function satisfiesPlacement(workerLabels: PlacementLabels, placement: PlacementLabels): boolean {
  return Object.entries(placement).every(([key, value]) => workerLabels[key] === value);
}
