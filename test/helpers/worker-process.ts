import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const WORKER_MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'worker-main.mjs');

/** How a process ended: exit code and signal, as the kernel reported them. */
export interface ExitReport {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/**
 * Workers still running: a test that fails before it stops its worker must not leave it to
 * retry a stopped Redis and compete for the CPU with the test files after it (seen: one alive
 * 30 s on).
 */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
});

/** A worker running in its own OS process, killed with real signals. */
export interface WorkerProcess {
  readonly pid: number;
  readonly name: string;
  readonly proc: ChildProcess;
  /** Everything the worker logged (pino JSON lines) so far. */
  output(): string;
  /** Sends a real signal. */
  signal(signal: NodeJS.Signals): void;
  /** Resolves when the process has exited, with its exit code and signal. */
  exited(): Promise<ExitReport>;
  /** SIGKILLs it (if alive) and waits for the exit. */
  kill(): Promise<ExitReport>;
}

/**
 * Starts `test/fixtures/worker-main.mjs` with the given worker options (JSON-serialisable)
 * and waits until it prints `ready`.
 * @param env extra environment for the worker process (e.g. secrets).
 * @param wrapper a command the worker is started through, e.g. `setpriv --reuid 65534 … --` (a non-root worker).
 */
export async function startWorkerProcess(options: Record<string, unknown>, env: NodeJS.ProcessEnv = {}, wrapper: readonly string[] = []): Promise<WorkerProcess> {
  const argv = [...wrapper, process.execPath, WORKER_MAIN, JSON.stringify(options)];
  const proc = spawn(argv[0] as string, argv.slice(1), {
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  let out = '';
  proc.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  proc.stderr?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exit = new Promise<ExitReport>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const name = await new Promise<string>((resolve, reject) => {
    const onData = (): void => {
      const match = /^ready (\S+)/m.exec(out);
      if (match) {
        proc.stdout?.off('data', onData);
        resolve(match[1] as string);
      }
    };
    proc.stdout?.on('data', onData);
    void exit.then((report) => reject(new Error(`worker exited before ready (${JSON.stringify(report)}):\n${out}`)));
  });
  return {
    pid: proc.pid as number,
    name,
    proc,
    output: () => out,
    signal: (signal) => void proc.kill(signal),
    exited: () => exit,
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      return exit;
    },
  };
}

/** True while a process with this pid exists (signal 0 probes without killing). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
