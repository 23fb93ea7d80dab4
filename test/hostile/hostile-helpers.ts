import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { codeRunner, type CodeRunOutput } from '../../src/runners/index.js';
import { detectContainment, gapNames, useContainment, type Boundary, type Containment, type ContainmentMode } from '../../src/sandbox/index.js';
import type { RolloutContext, SandboxSpec } from '../../src/spec/index.js';
import { hostProcesses } from '../helpers/host-processes.js';
import { fakeContext } from '../unit/runners/fake-context.js';

const ARTIFACTS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'artifacts');

/** The text of the attack artifact `test/hostile/artifacts/<name>.py`. */
export function artifact(name: string): string {
  return readFileSync(path.join(ARTIFACTS, `${name}.py`), 'utf8');
}

/**
 * The levels this machine (root, namespaces, cgroups v1, bubblewrap) can be put at in-process,
 * and the boundaries docs/security.md lists open at each ("Boundaries per level"). The weaker
 * two are forced on purpose (`detectContainment` modes), to prove each listed gap is real.
 */
export const LEVELS: ReadonlyArray<{ readonly mode: ContainmentMode; readonly level: string; readonly gaps: readonly Boundary[] }> = [
  { mode: 'auto', level: 'sealed', gaps: [] },
  { mode: 'namespace+cgroup', level: 'namespace+cgroup', gaps: ['network', 'proc', 'filesystem', 'identity', 'disk'] },
  { mode: 'process-group', level: 'process-group', gaps: ['network', 'proc', 'filesystem', 'identity', 'disk', 'cpu', 'pid', 'memory', 'processes'] },
];

const detected = new Map<ContainmentMode, Containment>();

/** The containment of `mode` on this machine (detected once per mode and test file). */
export function containmentOf(mode: ContainmentMode): Containment {
  let found = detected.get(mode);
  if (!found) {
    found = detectContainment(mode);
    detected.set(mode, found);
  }
  return found;
}

/** The open boundaries of `containment`, by name. */
export function openBoundaries(containment: Containment): Boundary[] {
  return gapNames(containment.gaps);
}

/** How an attack ended: its parsed first stdout line when it exited 0, else the error's type and message. */
export type AttackOutcome = { readonly ok: true; readonly report: Record<string, unknown>; readonly output: CodeRunOutput } | { readonly ok: false; readonly type: string; readonly message: string };

/**
 * Runs attack `name` with codeRunner at `containment` (`python3 main.py`, the task on stdin).
 * @param options.sandbox the spec's sandbox as ctx.sandbox (cpus, diskMb, network).
 * @param options.args extra arguments after main.py (a marker to find the program by on the host).
 */
export async function attack(
  containment: Containment,
  name: string,
  task: Record<string, unknown>,
  options: { readonly sandbox?: Partial<SandboxSpec>; readonly ctx?: Partial<RolloutContext>; readonly args?: readonly string[]; readonly timeoutMs?: number } = {},
): Promise<AttackOutcome> {
  useContainment(containment);
  const run = codeRunner({ entrypoint: 'main.py', command: ['python3', 'main.py', ...(options.args ?? [])], timeoutMs: options.timeoutMs ?? 30_000 });
  const ctx = fakeContext({ memoryMb: 512, sandbox: { env: [], memoryMb: 512, ...options.sandbox }, ...options.ctx });
  try {
    const output = await run(artifact(name), task, ctx);
    const first = output.stdout.split('\n')[0] ?? '';
    return { ok: true, report: JSON.parse(first) as Record<string, unknown>, output };
  } catch (err) {
    const error = err as Error & { type?: string };
    return { ok: false, type: error.type ?? error.name, message: error.message };
  }
}

/** The report of an attack that must have exited 0; throws with what happened otherwise. */
export function reportOf(outcome: AttackOutcome): Record<string, unknown> {
  if (!outcome.ok) throw new Error(`the attack artifact did not exit 0: ${outcome.type}: ${outcome.message}`);
  return outcome.report;
}

/** Live host processes running exactly `argv`. */
export function hostProcessesRunning(argv: readonly string[]): number[] {
  return hostProcesses()
    .filter((p) => p.state !== 'Z' && p.argv.length === argv.length && p.argv.every((a, i) => a === argv[i]))
    .map((p) => p.pid);
}

/**
 * Waits until a live host process whose argv holds `marker` exists: the only sign a sealed
 * attempt gives the host that it runs (it has no channel out but its output). No event says a
 * process started elsewhere: /proc is looked at every 25 ms, for at most `withinMs`.
 */
export async function untilHostProcess(marker: string, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!hostProcesses().some((p) => p.state !== 'Z' && p.argv.includes(marker))) {
    if (Date.now() > deadline) throw new Error(`no process with ${marker} in its argv appeared within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
