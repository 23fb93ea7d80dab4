import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadArtifact } from './artifact.js';
import { buildDrafts, buildRef, type RolloutDraft } from './build-drafts.js';
import { UsageError } from './errors.js';
import { MSG, typeName } from './messages.js';
import { packageRoot } from './paths.js';
import { readTasksFile } from './tasks-file.js';

/** The example the demo runs, relative to the package root. */
export const DEMO_EXAMPLE_DIR = path.join('examples', 'arithmetic');

/**
 * The demo's drafts from `examples/arithmetic/run.json`
 * (`{ "tasks"?: "tasks.jsonl", "artifact"?: "artifact", "run": Ref, "reward": Ref,
 * "timeouts"?: {runMs?, hangMs?}, "sandbox"?: {memoryMb?} }`, paths relative to it): the first
 * `count` tasks, the artifact directory and the Refs, the same inputs `rollout-queue run` takes.
 * @throws UsageError when the example is missing (not a clone), run.json is malformed or the
 *   tasks file holds fewer than `count` tasks.
 */
export async function loadDemoDrafts(count: number, root: string = packageRoot()): Promise<RolloutDraft[]> {
  const dir = path.join(root, DEMO_EXAMPLE_DIR);
  const runFile = path.join(dir, 'run.json');
  if (!existsSync(runFile)) throw new UsageError(MSG.exampleMissing(runFile));
  const config = readRunJson(runFile);
  const tasksFile = path.join(dir, typeof config.tasks === 'string' ? config.tasks : 'tasks.jsonl');
  const artifactDir = path.join(dir, typeof config.artifact === 'string' ? config.artifact : 'artifact');
  for (const needed of [tasksFile, artifactDir]) if (!existsSync(needed)) throw new UsageError(MSG.exampleMissing(needed));
  const tasks = await readTasksFile(tasksFile, { limit: count });
  // Fresh-user report: `demo --tasks 241` ran the file's 240 and said nothing of the one missing.
  if (tasks.length < count) throw new UsageError(MSG.demoTooFewTasks(count, tasks.length, tasksFile));
  const artifact = await loadArtifact(artifactDir);
  const timeouts = record(config.timeouts);
  const sandbox = record(config.sandbox);
  return buildDrafts(tasks, {
    rendered: artifact.rendered,
    run: buildRef(`${runFile} run`, refTarget(config.run, runFile, 'run'), record(record(config.run).config)),
    reward: buildRef(`${runFile} reward`, refTarget(config.reward, runFile, 'reward'), record(record(config.reward).config)),
    ...(typeof timeouts.runMs === 'number' ? { runMs: timeouts.runMs } : {}),
    ...(typeof timeouts.hangMs === 'number' ? { hangMs: timeouts.hangMs } : {}),
    ...(typeof sandbox.memoryMb === 'number' ? { memoryMb: sandbox.memoryMb } : {}),
  });
}

function readRunJson(file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (err) {
    throw new UsageError(MSG.exampleInvalid(file, (err as Error).message));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(MSG.exampleInvalid(file, `expected an object, got ${typeName(value)}`));
  return value as Record<string, unknown>;
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function refTarget(ref: unknown, file: string, field: string): string {
  const target = record(ref).$ref;
  if (typeof target !== 'string') throw new UsageError(MSG.exampleInvalid(file, `"${field}" must be a Ref {"$ref": "module:export", "config": {...}}`));
  return target;
}
