import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import os from 'node:os';
import { keepChild, releaseChild } from './own-children.js';

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
}

type StreamName = 'stdin' | 'stdout' | 'stderr';

/** A message of `rq-launch --serve` (native/rq-launch.c). */
type ServerMessage =
  | { readonly t: 'stdio'; readonly id: string; readonly stream: StreamName }
  | { readonly t: 'started'; readonly id: string; readonly pid: number }
  | { readonly t: 'exit'; readonly id: string; readonly code?: number; readonly signal?: number }
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
  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.ended) return;
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

/** The command frame `rq-launch --serve` reads: u32 LE length, then NUL-terminated fields. */
function frame(id: string, request: ServedLaunch): Buffer {
  const fields = [
    id,
    request.cwd,
    request.dataBytes === undefined ? '' : String(request.dataBytes),
    String(request.cgroupProcs.length),
    ...request.cgroupProcs,
    String(request.argv.length),
    ...request.argv,
    String(Object.keys(request.env).length),
    ...Object.entries(request.env).map(([name, value]) => `${name}=${value}`),
  ];
  for (const field of fields) {
    // spawn refuses these too; one would end the field early in the frame.
    if (field.includes('\0')) throw launchError('ERR_INVALID_ARG_VALUE', 'an argument or environment value holds a NUL byte');
  }
  const body = Buffer.from(`${fields.join('\0')}\0`);
  const header = Buffer.alloc(4);
  header.writeUInt32LE(body.length);
  return Buffer.concat([header, body]);
}

/**
 * `rq-launch --serve`, one per process and started at its first launch: starts every attempt at
 * a namespace level by cloning itself (a ~1 MB process) into the attempt's new PID namespace,
 * instead of this process (a rollout child, ~60 MB) forking a launcher program per attempt
 * (see native/rq-launch.c). It dies with this process (PR_SET_PDEATHSIG), and every attempt's
 * init with it. A server that died is started again at the next launch; the attempts it held
 * fail with `ELAUNCHER`.
 */
export class LaunchServer {
  private static current: LaunchServer | undefined;
  private readonly attempts = new Map<string, ServedAttempt>();
  private nextId = 0;
  private gone = false;

  private constructor(private readonly server: ChildProcess) {
    server.on('message', (message: ServerMessage, handle?: Socket) => this.receive(message, handle));
    server.once('exit', (code, signal) => this.lost(`the launch server (rq-launch --serve) exited (${signal ?? `code ${code}`}) with this attempt in flight`));
    server.once('error', (error) => this.lost(`the launch server (rq-launch --serve) failed: ${error.message}`));
    // The server is this process' child on purpose: the walk of leftover children spares it.
    if (server.pid !== undefined) keepChild(server.pid);
    this.idle();
  }

  /**
   * The server of this process for `launcher` (with `--user` when `userNamespace`), started when
   * there is none or the last one died.
   */
  static for(launcher: string, userNamespace: boolean): LaunchServer {
    if (!LaunchServer.current || LaunchServer.current.gone) {
      const args = ['--serve', '--parent', String(process.pid), ...(userNamespace ? ['--user'] : [])];
      LaunchServer.current = new LaunchServer(spawn(launcher, args, { stdio: ['pipe', 'ignore', 'inherit', 'ipc'], env: {}, serialization: 'json' }));
    }
    return LaunchServer.current;
  }

  /**
   * Asks for one attempt; its 'spawn' or 'error' follows.
   * @throws an error with code `ERR_INVALID_ARG_VALUE` for a NUL byte in an argument or variable.
   */
  launch(request: ServedLaunch): ServedAttempt {
    const id = String(++this.nextId);
    const message = frame(id, request);
    const attempt = new ServedAttempt(id);
    this.attempts.set(id, attempt);
    this.busy();
    this.server.stdin?.write(message);
    return attempt;
  }

  private receive(message: ServerMessage, handle: Socket | undefined): void {
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
        attempt.exited(message.code ?? null, message.signal === undefined ? null : signalName(message.signal));
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
  }

  private forget(id: string): void {
    this.attempts.delete(id);
    if (this.attempts.size === 0) this.idle();
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
