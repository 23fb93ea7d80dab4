import { z } from 'zod';
import { findJsonDataIssue } from './json-data.js';

/**
 * The evaluation harness' dispatch wire (`POST /dispatch` body, and the `task` of a dispatch
 * lease): `{ scenario, cellId, runAttemptId, rep, seed, generation?, placement?, cycleId? }`.
 * Unknown fields are dropped, so a client of a newer harness still gets through.
 */
export const DispatchRequestSchema = z
  .object({
    scenario: z.unknown().describe('The scenario, JSON data; handed to the Dispatch unchanged.'),
    cellId: z.string().min(1).max(512).describe('Names the cell (scenario × rep); with runAttemptId it keys the lease.'),
    runAttemptId: z.string().min(1).max(128).describe('Names the attempt of the evaluation run.'),
    rep: z.number().int().min(0).default(0),
    seed: z.number().int().default(0),
    generation: z.number().int().min(0).optional(),
    placement: z.union([z.string().min(1).max(256), z.record(z.string().max(64), z.string().max(256))]).optional(),
    cycleId: z.string().min(1).max(256).optional(),
  })
  .superRefine((request, ctx) => {
    const issue = request.scenario === undefined
      ? { path: 'scenario', message: 'is required (JSON data; null is allowed)' }
      : findJsonDataIssue(request.scenario, 'scenario', { scalarArraysOnly: false });
    if (issue) ctx.addIssue({ code: 'custom', path: ['scenario'], message: `${issue.path}: ${issue.message}` });
  })
  .meta({ id: 'DispatchRequest' });
export type DispatchRequest = z.infer<typeof DispatchRequestSchema>;

/** The fields of a dispatch request that name its call, as the harness' ctx carries them. */
export interface DispatchIdentity {
  /** Names the cell (scenario × rep) of the evaluation; with `runAttemptId` it keys the lease. */
  readonly cellId: string;
  /** Names this attempt of the evaluation run; a retried call of the same cell attempt attaches to the same lease. */
  readonly runAttemptId: string;
  readonly rep: number;
  readonly seed: number;
  readonly generation?: number;
  readonly cycleId?: string;
}

/** The {@link DispatchIdentity} of a request (optional fields only when set), for a Dispatch's ctx. */
export function dispatchIdentity(request: DispatchRequest): DispatchIdentity {
  return {
    cellId: request.cellId,
    runAttemptId: request.runAttemptId,
    rep: request.rep,
    seed: request.seed,
    ...(request.generation !== undefined ? { generation: request.generation } : {}),
    ...(request.cycleId !== undefined ? { cycleId: request.cycleId } : {}),
  };
}

/** One finished span of `ctx.trace.span` on the worker. */
export const DispatchSpanSchema = z.object({
  name: z.string(),
  startMs: z.number(),
  durationMs: z.number().min(0),
  error: z.object({ type: z.string(), message: z.string() }).optional(),
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
});
export type DispatchSpan = z.infer<typeof DispatchSpanSchema>;

/**
 * The output of `rollout-queue/dispatch:dispatchRunner`: the artifact, the small files the
 * dispatch wrote (`ctx.artifacts.write`, relative path → UTF-8 content, or base64 of bytes for
 * the paths listed in `binary`) and its spans.
 */
export const DispatchOutputSchema = z
  .object({
    artifact: z.unknown(),
    files: z.record(z.string(), z.string()).default({}),
    binary: z.array(z.string()).optional(),
    spans: z.array(DispatchSpanSchema).default([]),
  })
  .meta({ id: 'DispatchOutput' });
export type DispatchOutput = z.infer<typeof DispatchOutputSchema>;
