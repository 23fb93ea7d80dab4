import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { keepChild, releaseChild } from './own-children.js';
import { identityMarker, ownIdentity } from './process-identity.js';
import type { TenantView } from './tenant-view.js';
import { workRoot } from './work-root.js';

/** What {@link LaunchServer.launch} starts. */
export interface ServedLaunch {
  /** Program and arguments; a program without `/` is looked up on `env.PATH`. */
  readonly argv: readonly [string, ...string[]];
  readonly cwd: string;
  /** The program's whole environment. */
  readonly env: Readonly<Record<string, string>>;
  /** `cgroup.procs` files the attempt's init joins before the program starts. */
  readonly cgroupProcs: readonly string[];
  /** RLIMIT_DATA for the program, bytes, or undefined for none. */
  readonly dataBytes: number | undefined;
  /**
   * A tenant attempt (`argv` is bubblewrap's): the init drops to `identity` (when given) and
   * execs it in place; its exit says whether bubblewrap started the program (`setupFailed`).
   */
  readonly tenant?: { readonly identity: { readonly uid: number; readonly gid: number } | null };
}

/** What {@link LaunchServer.mount} makes: a tmpfs on `root` holding work/, tmp/ and shm/ owned by `uid`:`gid`. */
export interface ServedMount {
  /** An empty directory (as the server's mount namespace sees it: the same path as on the host). */
  readonly root: string;
  readonly bytes: number;
  readonly inodes: number;
  readonly uid: number;
  readonly gid: number;
}

type StreamName = 'stdin' | 'stdout' | 'stderr';

/** A message of `rq-launch --serve` (native/rq-launch.c). */
type ServerMessage =
  | { readonly t: 'stdio'; readonly id: string; readonly stream: StreamName }
  | { readonly t: 'started'; readonly id: string; readonly pid: number }
  | { readonly t: 'exit'; readonly id: string; readonly code?: number; readonly signal?: number; readonly setup?: 'ok' | 'failed' }
  | { readonly t: 'mounted' | 'unmounted'; readonly id: string }
  | { readonly t: 'error'; readonly id: string; readonly code: string; readonly message: string };

/**
 * One attempt started by the launch server, shaped as the part of `ChildProcess` the sandbox
 * uses: `pid` (the attempt's init, leader of the attempt's process group) and its three stdio
 * sockets, set once `'spawn'` is emitted; `'exit'` (code, signal) once the init was reaped (the
 * whole namespace is gone then); `'close'` after `'exit'` and the three sockets' close; `'error'`
 * when it could not start, or when the server died under it (code `ELAUNCHER`).
 */
export class ServedAttempt extends EventEmitter {
  pid: number | undefined;
  stdin: Socket | null = null;
  stdout: Socket | null = null;
  stderr: Socket | null = null;
  /** True once a tenant attempt exited without bubblewrap having started its program (a set-up failure, never the program's). */
  setupFailed = false;
  private openStreams = 3;
  private exit: [number | null, NodeJS.Signals | null] | undefined;
  private ended = false;

  /** @internal */
  constructor(readonly id: string) {
    super();
  }

  /** @internal A stdio socket arrived from the server. */
  attach(stream: StreamName, socket: Socket): void {
    this[stream] = socket;
    socket.once('close', () => {
      this.openStreams--;
      this.closeWhenDone();
    });
  }

  /** @internal */
  started(pid: number): void {
    this.pid = pid;
    this.emit('spawn');
  }

  /** @internal */
  exited(code: number | null, signal: NodeJS.Signals | null, setupFailed = false): void {
    if (this.ended) return;
    this.setupFailed = setupFailed;
    this.exit = [code, signal];
    this.emit('exit', code, signal);
    this.closeWhenDone();
  }

  /** @internal It could not start, or its server died: no 'exit' will come. */
  failed(error: Error): void {
    if (this.ended) return;
    this.ended = true;
    for (const socket of [this.stdin, this.stdout, this.stderr]) socket?.destroy();
    this.emit('error', error);
  }

  private closeWhenDone(): void {
    if (this.ended || !this.exit || this.openStreams > 0) return;
    this.ended = true;
    this.emit('close', ...this.exit);
  }
}

/** The error a launch fails with, shaped as `child_process.spawn`'s (`code`, `syscall`). */
function launchError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code, syscall: 'spawn' });
}

function signalName(signal: number): NodeJS.Signals | null {
  const entry = Object.entries(os.constants.signals).find(([, value]) => value === signal);
  return (entry?.[0] as NodeJS.Signals | undefined) ?? null;
}

/** A command frame `rq-launch --serve` reads: u32 LE length, then NUL-terminated fields. */
function encode(fields: readonly string[]): Buffer {
  for (const field of fields) {
    // spawn refuses these too; one would end the field early in the frame.
    if (field.includes('\0')) throw launchError('ERR_INVALID_ARG_VALUE', 'an argument or environment value holds a NUL byte');
  }
  const body = Buffer.from(`${fields.join('\0')}\0`);
  const header = Buffer.alloc(4);
  header.writeUInt32LE(body.length);
  return Buffer.concat([header, body]);
}

/** The launch frame (native/rq-launch.c parse_launch). */
function frame(id: string, request: ServedLaunch): Buffer {
  const identity = request.tenant?.identity;
  return encode([
    'launch',
    id,
    request.cwd,
    request.dataBytes === undefined ? '' : String(request.dataBytes),
    identity ? String(identity.uid) : '',
    identity ? String(identity.gid) : '',
    request.tenant ? '1' : '',
    String(request.cgroupProcs.length),
    ...request.cgroupProcs,
    String(request.argv.length),
    ...request.argv,
    String(Object.keys(request.env).length),
    ...Object.entries(request.env).map(([name, value]) => `${name}=${value}`),
  ]);
}

/** `pid` (a child of this process, holding `marker` in its command line) as this process' /proc numbers it. */
function procPidOf(pid: number, marker: string | undefined): number {
  const holds = (candidate: number): boolean => {
    try {
      return marker === undefined || readFileSync(`/proc/${candidate}/cmdline`, 'utf8').split('\0').includes(marker);
    } catch {
      return false;
    }
  };
  if (holds(pid)) return pid;
  try {
    for (const task of readdirSync('/proc/self/task')) {
      for (const child of readFileSync(`/proc/self/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number)) {
        if (holds(child)) return child;
      }
    }
  } catch {
    // No /proc to ask: the pid as it is.
  }
  return pid;
}

/** Arguments of a launch server: `--tenant <stage> --ro <path>…` for a tenant view. */
function serverArgs(userNamespace: boolean, tenant: { readonly view: TenantView; readonly stage: string } | undefined): string[] {
  return [
    '--serve',
    '--parent',
    String(process.pid),
    ...(userNamespace ? ['--user'] : []),
    ...(tenant ? ['--tenant', tenant.stage, ...tenant.view.readOnly.flatMap((p) => ['--ro', p])] : []),
  ];
}

/**
 * `rq-launch --serve`, one per process (and kind) and started at its first launch: starts every
 * attempt at a namespace level by cloning itself (a ~1 MB process) into the attempt's new PID
 * namespace, instead of this process (a rollout child, ~60 MB) forking a launcher program per
 * attempt (see native/rq-launch.c). It dies with this process (PR_SET_PDEATHSIG), and every
 * attempt's init with it. A server that died is started again at the next launch; the attempts
 * it held fail with `ELAUNCHER`.
 *
 * With a tenant view the server lives in a mount namespace of its own, where it mounts each
 * attempt's tmpfs ({@link mount}): this process reaches those files through {@link rootPrefix}
 * (`/proc/<server>/root`), the host never sees them, and they go with the server whatever kills it.
 */
export class LaunchServer {
  private static readonly servers = new Map<string, LaunchServer>();
  private readonly attempts = new Map<string, ServedAttempt>();
  private readonly replies = new Map<string, { resolve(): void; reject(error: Error): void }>();
  private nextId = 0;
  private gone = false;

  private constructor(
    private readonly server: ChildProcess,
    /** The read-only stage directory of a tenant server (removed once it exited), or undefined. */
    readonly stage: string | undefined,
  ) {
    server.on('message', (message: ServerMessage, handle?: Socket) => this.receive(message, handle));
    server.once('exit', (code, signal) => this.lost(`the launch server (rq-launch --serve) exited (${signal ?? `code ${code}`}) with this attempt in flight`));
    server.once('error', (error) => this.lost(`the launch server (rq-launch --serve) failed: ${error.message}`));
    // The server is this process' child on purpose: the walk of leftover children spares it.
    if (server.pid !== undefined) keepChild(server.pid);
    this.idle();
  }

  /**
   * The server of this process for `launcher` (with `--user` when `userNamespace`, with the
   * tenant view `tenant` when given), started when there is none or the last one died.
   * @throws the file-system error when a tenant server's stage directory cannot be made.
   */
  static for(launcher: string, userNamespace: boolean, tenant?: TenantView): LaunchServer {
    const key = JSON.stringify([launcher, userNamespace, tenant?.readOnly ?? null]);
    const known = LaunchServer.servers.get(key);
    if (known && !known.gone) return known;
    let stage: string | undefined;
    if (tenant) {
      mkdirSync(workRoot(), { recursive: true });
      stage = mkdtempSync(path.join(workRoot(), `stage-${identityMarker(ownIdentity())}-`));
    }
    const args = serverArgs(userNamespace, tenant && stage ? { view: tenant, stage } : undefined);
    const server = new LaunchServer(spawn(launcher, args, { stdio: ['pipe', 'ignore', 'inherit', 'ipc'], env: {}, serialization: 'json' }), stage);
    LaunchServer.servers.set(key, server);
    return server;
  }

  /**
   * Where this process finds the server's mount namespace: `/proc/<server pid>/root`, with the
   * server's pid as this process' /proc numbers it. That is `server.pid` unless this process runs
   * in a PID namespace of its own under a /proc mounted for its parent's (a rollout child of a
   * worker that is PID 1): then it is found among this process' children by the stage its
   * command line names.
   */
  get rootPrefix(): string {
    this.procPid ??= procPidOf(this.server.pid ?? 0, this.stage);
    return `/proc/${this.procPid}/root`;
  }

  private procPid: number | undefined;

  /**
   * Mounts an attempt's tmpfs in the server's mount namespace (see {@link ServedMount}).
   * @throws (rejects) an error with `code` (ENOSPC, ENOMEM, ELAUNCH…) when the server refused, `ELAUNCHER` when it is gone.
   */
  mount(request: ServedMount): Promise<void> {
    return this.ask(['mount', request.root, String(request.bytes), String(request.inodes), String(request.uid), String(request.gid)]);
  }

  /** Unmounts an attempt's tmpfs (lazily: what it held is freed once nothing uses it). Rejects like {@link mount}. */
  unmount(root: string): Promise<void> {
    return this.ask(['umount', root]);
  }

  /** Whether this server can take requests (it has not exited). */
  get alive(): boolean {
    return !this.gone;
  }

  private ask(fields: readonly [string, ...string[]]): Promise<void> {
    if (this.gone) return Promise.reject(launchError('ELAUNCHER', 'the launch server (rq-launch --serve) is gone'));
    const id = String(++this.nextId);
    const [op, ...rest] = fields;
    const message = encode([op, id, ...rest]);
    return new Promise<void>((resolve, reject) => {
      this.replies.set(id, { resolve, reject });
      this.busy();
      this.server.stdin?.write(message);
    });
  }

  /**
   * Asks for one attempt; its 'spawn' or 'error' follows.
   * @throws an error with code `ERR_INVALID_ARG_VALUE` for a NUL byte in an argument or variable.
   */
  launch(request: ServedLaunch): ServedAttempt {
    const id = String(++this.nextId);
    const message = frame(id, request);
    const attempt = new ServedAttempt(id);
    if (this.gone) {
      // A tenant attempt's tmpfs lives in this server's namespace: it cannot move to a new server.
      queueMicrotask(() => attempt.failed(launchError('ELAUNCHER', 'the launch server (rq-launch --serve) exited before this attempt started')));
      return attempt;
    }
    this.attempts.set(id, attempt);
    this.busy();
    this.server.stdin?.write(message);
    return attempt;
  }

  private receive(message: ServerMessage, handle: Socket | undefined): void {
    const reply = this.replies.get(message.id);
    if (reply) {
      this.replies.delete(message.id);
      if (this.attempts.size === 0 && this.replies.size === 0) this.idle();
      if (message.t === 'error') reply.reject(launchError(message.code, message.message));
      else reply.resolve();
      return;
    }
    const attempt = this.attempts.get(message.id);
    if (!attempt) {
      handle?.destroy();
      return;
    }
    switch (message.t) {
      case 'stdio':
        if (handle) attempt.attach(message.stream, handle);
        break;
      case 'started':
        attempt.started(message.pid);
        break;
      case 'exit':
        this.forget(message.id);
        attempt.exited(message.code ?? null, message.signal === undefined ? null : signalName(message.signal), message.setup === 'failed');
        break;
      case 'error':
        this.forget(message.id);
        attempt.failed(launchError(message.code, message.message));
        break;
    }
  }

  private lost(why: string): void {
    if (this.gone) return;
    this.gone = true;
    if (this.server.pid !== undefined) releaseChild(this.server.pid);
    for (const attempt of this.attempts.values()) attempt.failed(launchError('ELAUNCHER', why));
    this.attempts.clear();
    for (const reply of this.replies.values()) reply.reject(launchError('ELAUNCHER', why));
    this.replies.clear();
    // The stage was mounted in the server's namespace, gone with it: an empty directory is left.
    if (this.stage) {
      try {
        rmdirSync(this.stage);
      } catch {
        // Left to the sweep of dead creators' directories.
      }
    }
  }

  private forget(id: string): void {
    this.attempts.delete(id);
    if (this.attempts.size === 0 && this.replies.size === 0) this.idle();
  }

  /** In flight: the server's channel keeps this process' event loop alive until the replies came. */
  private busy(): void {
    this.server.channel?.ref();
  }

  /** Idle: an unused server never keeps this process alive. */
  private idle(): void {
    this.server.unref();
    this.server.channel?.unref();
    (this.server.stdin as Socket | null)?.unref();
  }
}
