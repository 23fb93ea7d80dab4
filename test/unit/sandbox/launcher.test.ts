import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeRunner } from '../../../src/runners/index.js';
import { detectContainment, killSubtree, NATIVE_LAUNCHER_PATH, Sandbox, useContainment, type Containment } from '../../../src/sandbox/index.js';
import { findOnPath } from '../../../src/sandbox/program-check.js';
import { hostProcesses, liveProcessesLike } from '../../helpers/host-processes.js';
import { fakeContext } from '../runners/fake-context.js';

// The launcher costs a program start per layer. With rq-launch (native/rq-launch.c) one program
// does what the util-linux chain does in three (setpriv, unshare, the namespace's init shell);
// both must put the artifact inside every attempt cgroup from its start and hand it exactly
// its own environment.
const chain = detectContainment('auto', { launcher: 'util-linux' });
const exec = detectContainment('auto', { launcher: 'exec' });
const native = detectContainment('auto');
// The launch server without the tenant view, forced on purpose: the serve tests below read the
// artifact's host pid, its cgroup path and files it writes to a host directory (all hidden at `sealed`).
const served = detectContainment('namespace+cgroup');

/**
 * The environment of the launcher process `pid` once it is `unshare` (setpriv execs it in place),
 * which then waits for the artifact: read earlier, /proc/<pid>/environ may come from the exec in
 * between, whose new image has no environment yet (an empty read, seen under a loaded CI).
 * No event says an exec finished: looked at every 5 ms, for at most 10 s.
 */
async function settledEnviron(pid: number, unshare: string): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const exe = readlinkSync(`/proc/${pid}/exe`);
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
    if (exe === unshare && environ.length > 0) return environ;
    if (Date.now() > deadline) throw new Error(`launcher ${pid} is still ${exe} with ${environ.length} variables after 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
/**
 * Spawns an artifact printing its environment under `containment` with `env`; returns the
 * launcher's environment (read by `launcherEnv` once the launcher process is there, before the
 * artifact is let go by closing its stdin) and the artifact's.
 */
async function environments(containment: Containment, env: Record<string, string>, launcherEnv: (pid: number) => Promise<string[]>): Promise<{ launcher: string[]; artifact: unknown }> {
  const box = await Sandbox.create({ name: `launcher-test.p${process.pid}`, memoryMb: 256, containment });
  try {
    const artifact = "process.stdin.resume(); process.stdin.on('end', () => console.log(JSON.stringify(process.env)));";
    const child = box.spawn([process.execPath, '-e', artifact], { cwd: box.dir, env });
    const launcher = (await launcherEnv(child.pid as number)).sort();
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const closed = new Promise((resolve) => child.once('close', resolve));
    child.stdin?.end();
    await closed;
    return { launcher, artifact: JSON.parse(out) as unknown };
  } finally {
    await box.destroy();
  }
}

const strongest = chain.level === 'namespace+cgroup';

/** Runs the artifact with codeRunner under `containment`; returns its stdout. */
async function runUnder(containment: Containment, artifact: string, secrets: Record<string, string> = {}): Promise<string> {
  useContainment(containment);
  try {
    return (await codeRunner({ entrypoint: 'main.js' })(artifact, { id: 't' }, fakeContext({ memoryMb: 256, secrets }))).stdout;
  } finally {
    useContainment(native);
  }
}

const PRINT_CGROUPS = "const fs = require('fs'); console.log(JSON.stringify({ dir: require('path').basename(process.cwd()), cgroups: fs.readFileSync('/proc/self/cgroup', 'utf8') }));";

/** Whether the artifact that printed {@link PRINT_CGROUPS} ran inside the attempt cgroup of `controller`. */
function inAttemptCgroup(stdout: string, controller: string): boolean {
  const { dir, cgroups } = JSON.parse(stdout) as { dir: string; cgroups: string };
  return cgroups
    .split('\n')
    .filter(Boolean)
    .some((line) => (chain.cgroup?.version === 2 ? line.startsWith('0::') : line.split(':')[1]?.split(',').includes(controller)) && line.endsWith(`/${dir}`));
}

describe('rq-launch is built wherever a C compiler is', () => {
  it('npm run build made native/rq-launch, and workers start attempts through its launch server', () => {
    // CI installs gcc (.ci/run), so this cannot pass there without the native launcher in use.
    if (!findOnPath(process.env.CC || 'cc', process.env.PATH ?? '')) return;
    expect(native.launcher).toBe(NATIVE_LAUNCHER_PATH);
    expect(native.serve).toBe(native.pidNamespace !== null);
    expect([exec.launcher, exec.serve]).toEqual([NATIVE_LAUNCHER_PATH, false]);
    expect([chain.launcher, chain.serve]).toEqual([null, false]);
  });
});

describe.skipIf(!strongest)('util-linux launcher chain at the namespace+cgroup level', () => {
  beforeAll(() => useContainment(chain));
  afterAll(() => useContainment(native));

  it('has one shell (the namespace init) and hands it the cgroup.procs files', async () => {
    const box = await Sandbox.create({ name: `launcher-test.p${process.pid}`, memoryMb: 256, containment: chain });
    try {
      const argv = box.command(['/bin/true']);
      expect(argv.filter((arg) => arg === '/bin/sh')).toHaveLength(1);
      const init = argv.indexOf('rq-init');
      const separator = argv.indexOf('--', init);
      const files = argv.slice(init + 1, separator);
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) expect(file).toMatch(/\/cgroup\.procs$/);
      expect(argv.slice(separator + 1)).toEqual(['/bin/true']);
    } finally {
      await box.destroy();
    }
  });

  it('names its tools by absolute path, setpriv first (its death signal survives the execs after it)', async () => {
    const box = await Sandbox.create({ name: `launcher-test.p${process.pid}`, memoryMb: 256, containment: chain });
    try {
      const argv = box.command(['/bin/true']);
      expect(argv[0]).toBe(chain.setpriv);
      expect(path.isAbsolute(argv[0])).toBe(true);
      const unshare = chain.pidNamespace?.[0] ?? '';
      expect(path.isAbsolute(unshare)).toBe(true);
      expect(argv).toContain(unshare);
    } finally {
      await box.destroy();
    }
  });

  it("runs the launcher with LC_ALL=C (no locale files read per tool) and the artifact with exactly its own environment", async () => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
    const seen = await environments(chain, env, (pid) => settledEnviron(pid, realpathSync(chain.pidNamespace?.[0] ?? '')));
    expect(seen).toEqual({ launcher: ['LANG=C.UTF-8', 'LC_ALL=C', `PATH=${env.PATH}`], artifact: env });
  });

  it('an LC_ALL of the artifact\'s own (a secret of that name) reaches it unchanged', async () => {
    const printEnv = 'console.log(JSON.stringify(Object.keys(process.env).sort()));';
    const out = await runUnder(chain, printEnv, { LC_ALL: 'C.UTF-8' });
    expect(JSON.parse(out)).toEqual(['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']);
  });

  it('the artifact runs inside the attempt cgroup of every hierarchy, named like its work directory', async () => {
    const out = await runUnder(chain, PRINT_CGROUPS);
    expect(inAttemptCgroup(out, 'memory')).toBe(true);
    expect(inAttemptCgroup(out, 'pids')).toBe(true);
  });
});

/** Runs the built rq-launch with `args`; returns its exit status and stderr. */
function launch(args: readonly string[]): { status: number | null; stderr: string } {
  const result = spawnSync(NATIVE_LAUNCHER_PATH, args, { encoding: 'utf8', timeout: 10_000 });
  return { status: result.status, stderr: result.stderr };
}

/** Resolves once `stream` has printed `text`. */
function printed(stream: NodeJS.ReadableStream, text: string): Promise<string> {
  let seen = '';
  return new Promise((resolve) => {
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      if (!seen.includes(text)) return;
      stream.off('data', onData);
      resolve(seen);
    };
    stream.on('data', onData);
  });
}

/**
 * Starts an artifact that answers SIGTERM by printing "term" and exiting 0, under `containment`;
 * once it runs, sends SIGTERM to the attempt's process group; returns its (code, signal).
 */
async function exitOnGroupSigterm(containment: Containment): Promise<[number | null, string | null]> {
  const box = await Sandbox.create({ name: `launcher-test.p${process.pid}`, memoryMb: 256, containment });
  try {
    const artifact = "process.on('SIGTERM', () => { console.log('term'); process.exit(0); }); console.log('ready'); setInterval(() => {}, 1000);";
    const child = box.spawn([process.execPath, '-e', artifact], { cwd: box.dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    const exited = new Promise<[number | null, string | null]>((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
    await new Promise((resolve) => child.once('spawn', resolve));
    await printed(child.stdout as NodeJS.ReadableStream, 'ready');
    const term = printed(child.stdout as NodeJS.ReadableStream, 'term');
    process.kill(-(child.pid as number), 'SIGTERM');
    await term;
    return await exited;
  } finally {
    await box.destroy();
  }
}

describe.skipIf(!strongest || exec.launcher === null)('rq-launch per attempt (ROLLOUT_QUEUE_LAUNCHER=exec) at the namespace+cgroup level', () => {
  it('is one program: no setpriv, unshare or shell, its death tied to this process, the cgroup.procs files handed over', async () => {
    const box = await Sandbox.create({ name: `launcher-test.p${process.pid}`, memoryMb: 256, containment: exec });
    try {
      const argv = box.command(['/bin/true']);
      const files = argv.flatMap((arg, i) => (argv[i - 1] === '--cgroup' ? [arg] : []));
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) expect(file).toMatch(/\/cgroup\.procs$/);
      expect(argv).toEqual([NATIVE_LAUNCHER_PATH, '--pid', '--parent', String(process.pid), ...files.flatMap((file) => ['--cgroup', file]), '--', '/bin/true']);
    } finally {
      await box.destroy();
    }
  });

  it('passes the artifact exactly its own environment, and runs with no other itself', async () => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
    // spawn returns once rq-launch is exec'd, and rq-launch execs nothing in place after that.
    const seen = await environments(exec, env, async (pid) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean));
    expect(seen).toEqual({ launcher: ['LANG=C.UTF-8', `PATH=${env.PATH}`], artifact: env });
  });

  it('the artifact runs inside the attempt cgroup of every hierarchy, as PID 2 of its own namespace', async () => {
    const out = await runUnder(exec, PRINT_CGROUPS);
    expect(inAttemptCgroup(out, 'memory')).toBe(true);
    expect(inAttemptCgroup(out, 'pids')).toBe(true);
    expect(await runUnder(exec, 'console.log(process.pid)')).toBe('2\n');
  });

  it('exits as a shell reports the program: its code, 128+n for signal n, 127 when not found, 125 for its own failures', () => {
    expect(launch(['--pid', '--', 'sh', '-c', 'exit 3']).status).toBe(3);
    expect(launch(['--pid', '--', 'sh', '-c', 'kill -TERM $$']).status).toBe(143);
    expect(launch(['--', 'sh', '-c', 'exit 4']).status).toBe(4);
    const missing = launch(['--pid', '--', 'rq-no-such-program']);
    expect(missing.status).toBe(127);
    expect(missing.stderr).toContain('rollout-queue sandbox: cannot run rq-no-such-program');
    expect(launch(['--parent', '1', '--', 'true']).status).toBe(125);
    const usage = launch(['--user', '--', 'true']);
    expect(usage.status).toBe(125);
    expect(usage.stderr).toContain('--user needs --pid');
    expect(launch(['--pid', '--cgroup', '/nonexistent/cgroup.procs', '--', 'true'])).toEqual({
      status: 125,
      stderr: 'rollout-queue sandbox: cannot join cgroup /nonexistent/cgroup.procs: No such file or directory\n',
    });
  });

  it('sets RLIMIT_DATA with --data, as prlimit --data does', () => {
    const result = spawnSync(NATIVE_LAUNCHER_PATH, ['--data=104857600', '--', 'sh', '-c', 'ulimit -d'], { encoding: 'utf8' });
    expect(result.stdout.trim()).toBe(String(104857600 / 1024));
  });

  it('a SIGTERM to its process group reaches the artifact, not the launcher or the namespace init', async () => {
    expect(await exitOnGroupSigterm(exec)).toEqual([0, null]);
  });

  it('dies with the process that spawned it, and its namespace with it (a SIGKILLed rollout child leaves nothing)', async () => {
    const linger = String(600 + (process.pid % 100)); // a value no other process here sleeps for
    // A stand-in for a rollout child: spawns the launcher with --parent, then is SIGKILLed.
    const parentScript = `const { spawn } = require('child_process');
      const l = spawn(${JSON.stringify(NATIVE_LAUNCHER_PATH)}, ['--pid', '--parent', String(process.pid), '--', 'sleep', ${JSON.stringify(linger)}], { stdio: 'ignore', detached: true });
      l.on('spawn', () => console.log('launched')); setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', parentScript], { stdio: ['ignore', 'pipe', 'inherit'] });
    await printed(parent.stdout as NodeJS.ReadableStream, '\n');
    // The sleep is PID 2 of the launcher's namespace once the launcher's init has forked it.
    const sleeping = (): number => liveProcessesLike(2, ['sleep', linger]).length;
    for (const until = Date.now() + 10_000; sleeping() === 0 && Date.now() < until; await new Promise((r) => setTimeout(r, 10)));
    expect(sleeping()).toBe(1);
    const parentGone = new Promise((resolve) => parent.once('exit', resolve));
    parent.kill('SIGKILL');
    await parentGone;
    // The kernel delivers the death signals as the parent exits; the namespace is then reaped.
    for (const until = Date.now() + 10_000; sleeping() > 0 && Date.now() < until; await new Promise((r) => setTimeout(r, 10)));
    expect(sleeping()).toBe(0);
  });
});

/** Pids of this process' children running `rq-launch --serve` (without the tenant view: `served`'s). */
function launchServers(): number[] {
  return hostProcesses()
    .filter((p) => p.ppid === process.pid && p.argv[0] === NATIVE_LAUNCHER_PATH && p.argv.includes('--serve') && !p.argv.includes('--tenant'))
    .map((p) => p.pid);
}

/** Live processes running `sleep <linger>`, wherever they are in the pid namespace tree. */
function sleepers(linger: string): number[] {
  return hostProcesses()
    .filter((p) => p.state !== 'Z' && p.argv.length === 2 && p.argv[0] === 'sleep' && p.argv[1] === linger)
    .map((p) => p.pid);
}

/** Waits (polled every 10 ms, at most 10 s) until `sleepers(linger)` has `count` entries; returns them. */
async function sleepersSettle(linger: string, count: number): Promise<number[]> {
  for (const until = Date.now() + 10_000; sleepers(linger).length !== count && Date.now() < until; await new Promise((r) => setTimeout(r, 10)));
  return sleepers(linger);
}

/**
 * Resolves once `file` exists (the artifact wrote it), polled every 10 ms for at most 10 s; with
 * `writer`, the process that runs the artifact, it waits as long as that process lives instead
 * (the test's own timeout bounds it) and fails at once, naming its exit, when it dies first.
 */
async function fileWritten(file: string, writer?: ChildProcess): Promise<void> {
  for (const until = Date.now() + 10_000; writer !== undefined || Date.now() < until; await new Promise((r) => setTimeout(r, 10))) {
    if (existsSync(file)) return;
    if (writer && writer.exitCode !== null) throw new Error(`${file} was not written: its writer exited with code ${writer.exitCode}`);
    if (writer && writer.signalCode !== null) throw new Error(`${file} was not written: its writer was killed by ${writer.signalCode}`);
  }
  throw new Error(`${file} was not written within 10 s`);
}

describe.skipIf(!strongest || !served.serve)('rq-launch --serve (one launch server per process) at the namespace+cgroup level, forced (see served)', () => {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'rq-serve-test-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('runs each attempt as PID 2 of its own namespace, inside the attempt cgroups, with exactly its own environment', async () => {
    const out = await runUnder(served, PRINT_CGROUPS);
    expect(inAttemptCgroup(out, 'memory')).toBe(true);
    expect(inAttemptCgroup(out, 'pids')).toBe(true);
    expect(await runUnder(served, 'console.log(process.pid)')).toBe('2\n');
    const keys = await runUnder(served, 'console.log(JSON.stringify(Object.keys(process.env).sort()))', { LC_ALL: 'C.UTF-8' });
    expect(JSON.parse(keys)).toEqual(['HOME', 'LANG', 'LC_ALL', 'PATH', 'TMPDIR']);
  });

  it('keeps one server across attempts, spared by the walk of leftover children, and runs attempts side by side', async () => {
    await runUnder(served, 'console.log(1)');
    const [server] = launchServers();
    expect(server).toBeDefined();
    killSubtree('self', { includeRoot: false }); // what a rollout child does after every rollout
    const outputs = await Promise.all([1, 2, 3].map((n) => runUnder(served, `setTimeout(() => console.log('attempt ${n}'), 200)`)));
    expect(outputs).toEqual(['attempt 1\n', 'attempt 2\n', 'attempt 3\n']);
    expect(launchServers()).toEqual([server]);
  });

  it('a SIGTERM to the attempt\'s process group reaches the artifact, not its init', async () => {
    expect(await exitOnGroupSigterm(served)).toEqual([0, null]);
  });

  it('a SIGKILLed server fails its running attempt as infrastructure, takes the attempt with it, and the next attempt gets a new server', async () => {
    useContainment(served);
    try {
      const pidfile = path.join(scratch, 'lost.pid');
      const linger = String(700 + (process.pid % 100));
      const artifact = `require('fs').writeFileSync(${JSON.stringify(pidfile)}, String(process.pid)); require('child_process').spawn('sleep', [${JSON.stringify(linger)}], { stdio: 'inherit' }).on('exit', () => {});`;
      const outcome = codeRunner({ entrypoint: 'main.js', timeoutMs: 30_000 })(artifact, { id: 't' }, fakeContext({ memoryMb: 256 })).then(
        () => 'ok',
        (err: Error & { type?: string }) => `${err.name}: ${err.message}`,
      );
      await fileWritten(pidfile);
      expect(await sleepersSettle(linger, 1)).toHaveLength(1);
      const [server] = launchServers();
      process.kill(server as number, 'SIGKILL');
      expect(await outcome).toMatch(/^InfrastructureError: codeRunner: lost the attempt running ".*" \(ELAUNCHER\): the launch server \(rq-launch --serve\) exited \(SIGKILL\) with this attempt in flight$/);
      expect(await sleepersSettle(linger, 0)).toEqual([]);
      expect(await runUnder(served, 'console.log("again")')).toBe('again\n');
      expect(launchServers()).toHaveLength(1);
      expect(launchServers()).not.toContain(server);
    } finally {
      useContainment(served);
    }
  });

  it('a SIGKILLed rollout process takes its server and every attempt with it', async () => {
    const pidfile = path.join(scratch, 'orphan.pid');
    const linger = String(800 + (process.pid % 100));
    // The built runner (`npm test` builds first): under the TypeScript loader the stand-in spent
    // seconds of CPU transpiling before its attempt started, past 10 s on a loaded CI machine.
    const runner = pathToFileURL(path.resolve('dist/runners/index.js')).href;
    // A stand-in for a rollout child: runs a codeRunner attempt that sleeps, and is SIGKILLed.
    const script = `const { codeRunner } = await import(${JSON.stringify(runner)});
      const artifact = ${JSON.stringify(`require('fs').writeFileSync(${JSON.stringify(pidfile)}, '1'); require('child_process').spawn('sleep', [${JSON.stringify(linger)}], { stdio: 'inherit' });`)};
      await codeRunner({ entrypoint: 'main.js', timeoutMs: 60000 })(artifact, {}, { leaseId: 'serve-orphan', runAttemptId: 'r', attempt: 1, signal: new AbortController().signal, secrets: {}, memoryMb: 256 });`;
    const rollout = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit', env: { ...process.env, ROLLOUT_QUEUE_CONTAINMENT: 'namespace+cgroup' } });
    await fileWritten(pidfile, rollout);
    expect(await sleepersSettle(linger, 1)).toHaveLength(1);
    const gone = new Promise((resolve) => rollout.once('exit', resolve));
    rollout.kill('SIGKILL');
    await gone;
    expect(await sleepersSettle(linger, 0)).toEqual([]);
  });

  it('answers a frame it cannot read with an error and goes on serving; refuses to start without an IPC channel', async () => {
    const server = spawn(NATIVE_LAUNCHER_PATH, ['--serve'], { stdio: ['pipe', 'ignore', 'pipe', 'ipc'], env: {} });
    try {
      const replies: unknown[] = [];
      let waiting: { count: number; resolve: () => void } | undefined;
      server.on('message', (message, handle?: { destroy(): void }) => {
        handle?.destroy();
        replies.push(message);
        if (waiting && replies.length >= waiting.count) waiting.resolve();
      });
      const replied = (count: number): Promise<void> =>
        new Promise((resolve) => {
          if (replies.length >= count) resolve();
          else waiting = { count, resolve };
        });
      const frame = (fields: string[]): Buffer => {
        const body = Buffer.from(`${fields.join('\0')}\0`);
        const header = Buffer.alloc(4);
        header.writeUInt32LE(body.length);
        return Buffer.concat([header, body]);
      };
      // An id that is not a number, a list count past the fields there are, an unknown op, and a
      // mount frame to a server without its own mount namespace (it would mount in the host's).
      server.stdin?.write(frame(['launch', 'x"y', '/', '', '', '', '', '0', '1', 'true', '0']));
      server.stdin?.write(frame(['launch', '7', '/', '', '', '', '', '0', '5', 'true']));
      server.stdin?.write(frame(['format', '9', '/']));
      server.stdin?.write(frame(['mount', '10', scratch, '1048576', '64', '0', '0']));
      await replied(4);
      expect(replies).toEqual([
        { t: 'error', id: '', code: 'ELAUNCH', message: 'bad command frame: Invalid argument' },
        { t: 'error', id: '7', code: 'ELAUNCH', message: 'bad command frame: Invalid argument' },
        { t: 'error', id: '9', code: 'ELAUNCH', message: 'bad command frame: Invalid argument' },
        { t: 'error', id: '10', code: 'ELAUNCH', message: 'mount frames need a server started with --tenant: Invalid argument' },
      ]);
      // Still serving: a good frame starts an attempt.
      server.stdin?.write(frame(['launch', '8', '/', '', '', '', '', '0', '1', 'true', '1', 'PATH=/usr/bin:/bin']));
      await replied(9);
      expect(replies.slice(4).map((message) => (message as { t: string }).t)).toEqual(['stdio', 'stdio', 'stdio', 'started', 'exit']);
      expect(replies[8]).toEqual({ t: 'exit', id: '8', code: 0 });
    } finally {
      server.kill('SIGKILL');
    }
    const alone = launch(['--serve']);
    expect(alone.status).toBe(125);
    expect(alone.stderr).toContain('--serve needs a Node IPC channel (NODE_CHANNEL_FD)');
  });
});

describe.skipIf(native.level !== 'sealed')('rq-launch --serve at the sealed level (the tenant view: bubblewrap exec\'d as the attempt\'s PID 1)', () => {
  it('a SIGTERM to the attempt\'s process group reaches the artifact, not bubblewrap\'s monitor (PID 1 ignores it)', async () => {
    expect(await exitOnGroupSigterm(native)).toEqual([0, null]);
  });
});

// Found while sizing codeRunner's output against sandbox.memoryMb: an artifact writing 1 MiB
// to stderr, then 1 MiB to stdout, in turn, hung its rollout under the launch server. The
// stdio ends rq-launch --serve handed over were blocking; libuv reads again after a read that
// filled its 64 KiB buffer, and that read blocked the rollout child's event loop (its timers
// too) while the artifact waited, blocked, for the other stream to be read.
describe.skipIf(!strongest)('every launcher reads an artifact that floods stdout and stderr in turn to its end', () => {
  const FLOOD = "const fs = require('fs'); const a = Buffer.alloc(1 << 20, 97), b = Buffer.alloc(1 << 20, 98); for (let i = 0; i < 8; i++) { fs.writeSync(2, b); fs.writeSync(1, a); } fs.writeSync(1, 'done\\n');";
  const launchers = [['rq-launch --serve', native], ['rq-launch', exec], ['util-linux', chain]] as const;
  it.each(launchers.filter(([, containment]) => containment.launcher !== null || containment === chain))('%s', async (_name, containment) => {
    useContainment(containment);
    try {
      const out = await codeRunner({ entrypoint: 'main.js', timeoutMs: 30_000 })(FLOOD, { id: 't' }, fakeContext({ memoryMb: 256 }));
      expect(out.stdout.endsWith('done\n')).toBe(true);
      expect(out.stdoutDroppedBytes + out.stdout.length).toBeGreaterThan(8 << 20);
      expect(out.stderrDroppedBytes).toBeGreaterThan(0);
    } finally {
      useContainment(native);
    }
  });
});
