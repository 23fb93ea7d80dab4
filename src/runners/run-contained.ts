import path from 'node:path';
import { InfrastructureError, ModelError } from '../spec/errors.js';
import { gapNames, Sandbox, type Boundary, type ContainmentLevel, type SandboxUsage } from '../sandbox/index.js';
import { childEnv, redactSecrets } from './child-env.js';
import { runProcessGroup, TAIL_BYTES, type GroupRunOutcome } from './process-group.js';
import { writeArtifact, type ArtifactFiles } from './work-dir.js';

/** Spawn errors that say the machine is short of something: the plane's problem, never the artifact's. */
const RESOURCE_ERRORS: ReadonlySet<string> = new Set(['EAGAIN', 'ENOMEM', 'EMFILE', 'ENFILE', 'ENOSPC']);

/** The limits of one contained program: the spec's `sandbox` (see `SandboxSpecSchema`). */
export interface ContainedLimits {
  /** Memory over the program's whole process tree, MiB. */
  readonly memoryMb: number;
  /** CPU time, CPUs. Default 1. */
  readonly cpus?: number | undefined;
  /** What it may write (work dir, /tmp, /dev/shm together), MiB. Default 512. */
  readonly diskMb?: number | undefined;
  /** `host` asks for the worker's network (granted only by a worker started with --allow-network). Default `none`. */
  readonly network?: 'none' | 'host' | undefined;
}

/** What {@link runContained} runs: one program of a spec (a hostile tenant, docs/security.md). */
export interface ContainedRunRequest {
  /** Who runs it, the start of every message (e.g. `codeRunner`). */
  readonly label: string;
  /** Start of the sandbox's name: letters, digits, `._-` (e.g. `attemptName(ctx)`). */
  readonly name: string;
  /** Files written to the program's work dir first: relative path → text (or bytes). */
  readonly files: ArtifactFiles;
  /** The one of `files` made executable (mode 0755), if any. */
  readonly executable?: string | undefined;
  /**
   * The program and its arguments, given the work dir as the program sees it (`/work` in the
   * tenant view): e.g. `() => ['python3', 'main.py']`, or `(dir) => [`${dir}/main`]`. A program
   * without `/` is looked up on the program's PATH (the interpreters' bin directories first).
   */
  readonly argv: (workDir: string) => readonly [string, ...string[]];
  /** Written to its stdin, which is then closed. */
  readonly stdin: string;
  /** Secret values by name: in its environment (`childEnv`), replaced by `[secret NAME]` in everything reported. */
  readonly secrets: Readonly<Record<string, string>>;
  /** Wall-clock limit from its start, ms: past it everything in the sandbox is killed (`ended: "timeout"`). */
  readonly timeoutMs: number;
  /** Bytes kept of each of stdout and stderr. */
  readonly maxOutputBytes: number;
  /** Aborting it kills everything in the sandbox (`ended: "aborted"`). */
  readonly signal: AbortSignal;
  readonly limits: ContainedLimits;
  /**
   * Called with the work dir (as this process reaches it) once the program has ended and before
   * the sandbox is destroyed, e.g. to copy what it left there. What it throws is thrown by
   * runContained (after the sandbox is destroyed).
   */
  readonly beforeDestroy?: ((workDir: string, outcome: GroupRunOutcome) => void) | undefined;
}

/** The level and open boundaries an attempt ran under (JSON data, put in Results). */
export interface ContainmentReport {
  readonly level: ContainmentLevel;
  /** Names of the boundaries this worker leaves open (`containmentGaps`), empty at `sealed`. */
  readonly gaps: readonly Boundary[];
}

/** How a contained program ended, with what it used; read before its sandbox was destroyed. */
export interface ContainedRun {
  readonly outcome: GroupRunOutcome;
  readonly usage: SandboxUsage;
  /** The limits actually applied (undefined: not enforced on this worker). */
  readonly applied: { readonly memoryMb: number | undefined; readonly diskMb: number | undefined; readonly cpus: number | undefined };
  readonly containment: ContainmentReport;
}

/**
 * Runs one program a spec names (codeRunner's artifact; a judge program) as a hostile tenant:
 * makes its sandbox (`Sandbox.create`: work dir, cgroup, tenant view per the worker's
 * containment), writes `files` there, runs `argv` with `stdin`, a clean environment (`childEnv`)
 * and the limits, kills everything in the sandbox on `timeoutMs` or abort, and destroys the
 * sandbox whatever the outcome. The one entry point for every program the plane spawns for a spec.
 *
 * Resolves with how it ended (a non-zero exit, a signal, a time-out are outcomes, for the caller
 * to judge). Throws:
 * - `CallerError` (type `NetworkNotAllowed`) for `limits.network: "host"` on a worker without `--allow-network`;
 * - `InfrastructureError` when the sandbox could not be made or the files written, the program
 *   or its interpreter is missing on this worker, the machine is out of processes, memory or
 *   file descriptors, the launch server was lost mid-run (`ELAUNCHER`), or bubblewrap could not
 *   set up the tenant view (its message quoted);
 * - `ModelError('SpawnFailed')` for a program among `files` the OS cannot execute (no `#!` line, bad format).
 * Secret values are replaced by `[secret NAME]` in every message.
 */
export async function runContained(request: ContainedRunRequest): Promise<ContainedRun> {
  const { label, limits, secrets } = request;
  let sandbox: Sandbox;
  try {
    sandbox = await Sandbox.create({ name: request.name, memoryMb: limits.memoryMb, cpus: limits.cpus, diskMb: limits.diskMb, network: limits.network });
  } catch (err) {
    if ((err as { type?: unknown }).type === 'NetworkNotAllowed') throw err;
    throw new InfrastructureError(`${label}: could not create the attempt's sandbox (work directory, tmpfs, cgroup): ${errorText(err)}`, { cause: err });
  }
  try {
    try {
      writeArtifact(sandbox.dir, request.files, request.executable ?? '', sandbox.containment.tenant?.identity ?? undefined);
    } catch (err) {
      throw new InfrastructureError(`${label}: could not write the artifact to ${sandbox.dir}: ${errorText(err)}`, { cause: err });
    }
    const view = sandbox.view;
    const argv = request.argv(view.workDir);
    let outcome: GroupRunOutcome;
    try {
      outcome = await runProcessGroup({
        argv,
        cwd: sandbox.dir,
        env: childEnv(view, secrets),
        stdin: request.stdin,
        timeoutMs: request.timeoutMs,
        maxOutputBytes: request.maxOutputBytes,
        signal: request.signal,
        sandbox,
      });
    } catch (err) {
      throw spawnFailure(label, err, argv, view.workDir, secrets);
    }
    if (sandbox.setupFailed && outcome.ended === 'exited') {
      throw new InfrastructureError(`${label}: the tenant sandbox (bubblewrap) could not start ${JSON.stringify(argv[0])} on this worker: ${tail(outcome, secrets) || 'no message'}`);
    }
    request.beforeDestroy?.(sandbox.dir, outcome);
    return {
      outcome,
      usage: sandbox.usage(),
      applied: { memoryMb: sandbox.memoryLimitMb, diskMb: sandbox.diskLimitMb, cpus: sandbox.cpuLimit },
      containment: { level: sandbox.containment.level, gaps: gapNames(sandbox.containment.gaps) },
    };
  } finally {
    await sandbox.destroy();
  }
}

/** The last {@link TAIL_BYTES} characters of stderr, secrets replaced (before the cut, so none straddles it). */
function tail(outcome: GroupRunOutcome, secrets: Readonly<Record<string, string>>): string {
  const redacted = redactSecrets(outcome.stderr.tailText(), secrets).trim();
  return redacted.length > TAIL_BYTES ? redacted.slice(redacted.length - TAIL_BYTES) : redacted;
}

function spawnFailure(label: string, err: unknown, argv: readonly string[], workDir: string, secrets: Readonly<Record<string, string>>): Error {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? 'unknown';
  const program = argv[0] ?? '';
  const detail = redactSecrets(errorText(err), secrets);
  if (code === 'ELAUNCHER') {
    // The attempt had started: its launch server died under it (see sandbox/launch-server.ts).
    return new InfrastructureError(`${label}: lost the attempt running ${JSON.stringify(program)} (ELAUNCHER): ${detail}`, { cause: err });
  }
  const inArtifact = program.includes('/') && path.resolve(workDir, program).startsWith(`${workDir}${path.sep}`);
  if (inArtifact && !RESOURCE_ERRORS.has(code)) {
    return new ModelError(
      'SpawnFailed',
      `artifact ${JSON.stringify(path.relative(workDir, path.resolve(workDir, program)))} could not be executed (${code}): ${detail}; ` +
        'a script needs a "#!" line naming an interpreter installed on the worker',
      { cause: err },
    );
  }
  return new InfrastructureError(`${label}: could not start ${JSON.stringify(program)} (${code}) on this worker: ${detail}`, { cause: err });
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
