import { spawn, type ChildProcess } from 'node:child_process';
import { cliCommandFor } from '../../../src/cli/cli-command.js';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (where bin/ and dist/ are). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The real launcher, as users run it. */
export const BIN = path.join(REPO_ROOT, 'bin', 'rollout-queue.js');

/**
 * How the CLI started by {@link startCli} with `env` (its REDIS_URL and ROLLOUT_QUEUE_PREFIX) in
 * `cwd` names itself in its hints (see cliCommandFor).
 */
export function cliHint(env: Readonly<Record<string, string | undefined>>, cwd: string = REPO_ROOT): string {
  return cliCommandFor({ script: BIN, pathEnv: process.env.PATH, cwd, env });
}

/** How a CLI process ended, with everything it printed. */
export interface CliOutcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link startCli}. */
export interface CliOptions {
  /** Extra environment (merged over process.env, with REDIS_URL removed unless given here). */
  readonly env?: Record<string, string | undefined>;
  readonly cwd?: string;
}

/** A running CLI process: its output so far and its end. */
export interface CliProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  readonly done: Promise<CliOutcome>;
}

const live = new Set<ChildProcess>();

/** A fresh key prefix, so tests sharing a Redis never see each other's keys. */
export function uniquePrefix(label: string): string {
  return `${label}${randomBytes(3).toString('hex')}`;
}

/** Starts `node bin/rollout-queue.js ...args` with output collected. */
export function startCli(args: readonly string[], options: CliOptions = {}): CliProcess {
  const { REDIS_URL: _ignored, ...base } = process.env;
  const env = { ...base, LOG_LEVEL: 'warn', ...options.env } as NodeJS.ProcessEnv;
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  const done = new Promise<CliOutcome>((resolve) => {
    child.once('close', (code, signal) => {
      live.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, stdout: () => stdout, stderr: () => stderr, done };
}

/** Runs the CLI to its end. */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliOutcome> {
  return startCli(args, options).done;
}

/** Waits until `predicate` holds, polling every 25 ms. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * SIGKILLs every CLI process a test left running and says which, so a test that leaks a
 * process fails instead of slowing the next one down.
 */
export async function killLeftovers(): Promise<string[]> {
  const leaked = [...live].map((child) => `pid ${child.pid}: ${child.spawnargs.slice(2).join(' ')}`);
  await Promise.all(
    [...live].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('close', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  return leaked;
}
