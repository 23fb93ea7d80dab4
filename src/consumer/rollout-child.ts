import { fork, spawn, type ChildProcess } from 'node:child_process';
import { closeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { killSubtree, sweepDeadSandboxes, type Containment } from '../sandbox/index.js';
import type { CostReceipt } from '../spec/index.js';
import type { ChildMessage, DoneMessage, LogMessage, ParentMessage, RunMessage } from './child-protocol.js';
import { createStageBoard, readRewardStage } from './stage-board.js';
import { StageDeadline, type Overrun, type StageLimits } from './stage-deadline.js';

/** Bytes of a child's stderr kept for exit reports (the tail is what explains a crash). */
export const STDERR_TAIL_BYTES = 4096;

const CHILD_MAIN = fileURLToPath(new URL('./child-main.js', import.meta.url));

/** How a rollout attempt in a child ended, seen from the worker's main process. */
export type AttemptOutcome =
  | { readonly type: 'done'; readonly done: DoneMessage; readonly costs: readonly CostReceipt[] }
  | { readonly type: 'crashed'; readonly exitCode: number | null; readonly signal: string | null; readonly stderrTail: string; readonly costs: readonly CostReceipt[] }
  | { readonly type: 'hung'; readonly hangMs: number; readonly stderrTail: string; readonly costs: readonly CostReceipt[] }
  | { readonly type: 'overran'; readonly overrun: Overrun; readonly stderrTail: string; readonly costs: readonly CostReceipt[] }
  | { readonly type: 'aborted'; readonly reason: string; readonly costs: readonly CostReceipt[] };

/**
 * Whether rollout children get a PID namespace of their own (`unshare --pid --fork`, the child
 * its PID 1): only when this worker is PID 1 itself. Node reaps only the processes it spawned,
 * so whatever a crashed or killed child leaves would otherwise be re-parented to the worker and
 * stay a zombie; in its own namespace it dies and is reaped with the child. (Elsewhere the
 * host's init reaps such orphans, and a node PID 1 in the child would not.) Needs a privileged
 * namespace (not `--user`), so the child's /proc view of the worker stays readable.
 */
function ownNamespace(containment: Containment): boolean {
  return process.pid === 1 && containment.pidNamespace !== null && !containment.pidNamespace.includes('--user');
}

/**
 * How the worker stops one running attempt: {@link abort} once, heard by the attempt's one
 * listener. Not an AbortController: in Node 20 making an AbortSignal and adding and removing a
 * listener costs ~8 µs (EventTarget set-up), for every rollout, on the event loop that holds
 * the locks, and only a few rollouts are ever aborted.
 */
export class AttemptAbort {
  #reason: string | undefined;
  #listener: (() => void) | undefined;

  /** The reason given to {@link abort}; undefined while not aborted. */
  get reason(): string | undefined {
    return this.#reason;
  }

  /** Aborts with `reason` and calls the listener; false (nothing changes) when aborted already. */
  abort(reason: string): boolean {
    if (this.#reason !== undefined) return false;
    this.#reason = reason;
    this.#listener?.();
    return true;
  }

  /** Sets the one listener, called on {@link abort}; returns what removes it. */
  listen(listener: () => void): () => void {
    this.#listener = listener;
    return () => {
      if (this.#listener === listener) this.#listener = undefined;
    };
  }
}

/** Raised when a child exits before it is ready (bad execArgv, missing file, no memory). */
export class ChildStartError extends Error {
  constructor(
    readonly exitCode: number | null,
    readonly signal: string | null,
    readonly stderrTail: string,
  ) {
    super(`rollout child failed to start (exit code ${exitCode}, signal ${signal}): ${stderrTail.trim().slice(-500) || '(no stderr)'}`);
    this.name = 'ChildStartError';
  }
}

/** Options of {@link RolloutChild.start}. */
export interface RolloutChildOptions {
  /** Heap limit of the child in MiB (`--max-old-space-size`). */
  readonly memoryMb: number;
  /** Extra node flags for the child (tests use a bad one to show a start failure). */
  readonly execArgv: readonly string[];
  /** Allowlist sent to the child for Ref resolution. */
  readonly allow: readonly string[];
  /** Environment of the child: minimal by design (secrets travel per rollout over IPC). */
  readonly env: NodeJS.ProcessEnv;
  /** Milliseconds to wait for the child's `ready`. */
  readonly startTimeoutMs: number;
  /** Where rollout log lines go. */
  readonly onLog: (message: LogMessage) => void;
  /** The worker's containment: sent to the child; with `setpriv` the child dies with the worker. */
  readonly containment: Containment;
  /** Largest output of a run, bytes of JSON: sent to the child. */
  readonly maxOutputBytes: number;
}

/**
 * One forked child that runs rollouts one at a time. It is the leader of its own process
 * group (`detached`), so a hard kill takes its whole tree, and where `setpriv` exists it is
 * started with PR_SET_PDEATHSIG = SIGKILL, so it dies with the worker even when its event
 * loop is stuck. Children are reused until recycled; one that failed to start or crashed is
 * never reused. After a child is gone, the worker removes what its attempts left (work
 * dirs, cgroups), so that never depends on code in the killed process.
 */
export class RolloutChild {
  private stderrTail = '';
  private exit: { code: number | null; signal: string | null } | undefined;
  private readonly exitWaiters = new Set<() => void>();
  /** Rollouts this child has finished. */
  rollouts = 0;
  /** Rollouts sent to the child: the child numbers them the same way on the stage board. */
  private sent = 0;
  /** Resident set size reported after the last rollout, bytes. */
  rssBytes = 0;
  /**
   * The IPC handler of the rollout running now (one at a time), behind one listener for the
   * child's whole life: an EventEmitter listener added and removed per rollout costs more.
   */
  private onRunMessage: ((message: ChildMessage) => void) | undefined;

  private constructor(
    private readonly proc: ChildProcess,
    readonly memoryMb: number,
    private readonly onLog: (message: LogMessage) => void,
    private readonly containment: Containment,
    /** The worker's fd of this child's stage board (see stage-board.ts). */
    private readonly stageBoard: number,
  ) {
    proc.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    // Rollout code writing to stdout must not fill the pipe and block the child.
    proc.stdout?.resume();
    proc.on('message', (message: ChildMessage) => this.onRunMessage?.(message));
    proc.on('exit', (code, signal) => {
      this.exit = { code, signal };
      const waiters = [...this.exitWaiters];
      this.exitWaiters.clear();
      for (const waiter of waiters) waiter();
      // After the waiters' own setImmediate: a run judging the exit may still read the board.
      setImmediate(() => closeSync(stageBoard));
    });
    proc.on('error', () => {
      // 'exit' follows for spawn failures of a forked node; nothing else to do here.
    });
  }

  /** The child's pid (undefined only if the fork itself failed). */
  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** True once the process has exited. */
  get exited(): boolean {
    return this.exit !== undefined;
  }

  /**
   * Forks a child and waits for its `ready`.
   * @throws ChildStartError with the real exit code and stderr tail when it dies first or times out.
   */
  static async start(options: RolloutChildOptions): Promise<RolloutChild> {
    const execArgv = [`--max-old-space-size=${options.memoryMb}`, ...options.execArgv];
    // The stage board goes to the child's fd 4 (STAGE_BOARD_FD).
    const stageBoard = createStageBoard();
    const stdio: ['ignore', 'pipe', 'pipe', 'ipc', number] = ['ignore', 'pipe', 'pipe', 'ipc', stageBoard];
    // fork() is spawn(execPath) with an IPC channel; setpriv execs node in place, so the channel
    // (NODE_CHANNEL_FD) and the pid are node's own.
    const launcher = [
      ...(options.containment.setpriv ? [options.containment.setpriv, '--pdeathsig', 'KILL', '--'] : []),
      ...(ownNamespace(options.containment) ? [...(options.containment.pidNamespace ?? []), '--'] : []),
    ];
    const [program = process.execPath, ...args] = [...launcher, process.execPath, ...execArgv, CHILD_MAIN];
    let proc: ChildProcess;
    try {
      proc =
        launcher.length > 0
          ? spawn(program, args, { env: options.env, detached: true, stdio, serialization: 'json' })
          : fork(CHILD_MAIN, [], { execArgv, env: options.env, detached: true, stdio, serialization: 'json' });
    } catch (error) {
      closeSync(stageBoard);
      throw error;
    }
    const child = new RolloutChild(proc, options.memoryMb, options.onLog, options.containment, stageBoard);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill();
        reject(new ChildStartError(null, null, `${child.stderrTail}\n(no ready message within ${options.startTimeoutMs} ms)`));
      }, options.startTimeoutMs);
      const onMessage = (message: ChildMessage): void => {
        if (message.type !== 'ready') return;
        clearTimeout(timer);
        proc.off('message', onMessage);
        unwatchExit();
        resolve();
      };
      proc.on('message', onMessage);
      const unwatchExit = child.onExit(() => {
        clearTimeout(timer);
        // Give the stderr pipe a moment to drain so the tail holds the real reason.
        setImmediate(() => reject(new ChildStartError(child.exit?.code ?? null, child.exit?.signal ?? null, child.stderrTail)));
      });
      child.post({ type: 'init', allow: options.allow, containment: options.containment, maxOutputBytes: options.maxOutputBytes });
    });
    return child;
  }

  /** Calls `waiter` once the child has exited (at once if it has); returns what stops the wait. */
  private onExit(waiter: () => void): () => void {
    if (this.exit) {
      waiter();
      return () => undefined;
    }
    this.exitWaiters.add(waiter);
    return () => this.exitWaiters.delete(waiter);
  }

  private post(message: ParentMessage): void {
    if (this.proc.connected) this.proc.send(message, (err) => void err);
  }

  /** Asks the running rollout to abort through `ctx.signal`. */
  cancel(reason: string): void {
    this.post({ type: 'cancel', reason });
  }

  /**
   * SIGKILLs the child's whole process tree (a walk of its own subtree, never of the
   * machine); resolves once the child has exited and what its attempts left on disk and in
   * cgroups is removed.
   */
  async kill(): Promise<void> {
    if (this.proc.pid !== undefined && !this.exit) killSubtree(this.proc.pid, { includeRoot: true });
    await new Promise<void>((resolve) => this.onExit(resolve));
    if (this.proc.pid !== undefined) await this.reclaim(this.proc.pid);
  }

  private reclaiming: Promise<void> | undefined;

  /** Removes the sandboxes this (dead) child made; once per child. */
  private reclaim(pid: number): Promise<void> {
    // In a namespace of its own the child is not `pid` (that is its unshare): sweep every dead creator.
    const creatorPid = ownNamespace(this.containment) ? undefined : pid;
    this.reclaiming ??= sweepDeadSandboxes({ ...(creatorPid !== undefined ? { creatorPid } : {}), containment: this.containment }).then(() => undefined, () => undefined);
    return this.reclaiming;
  }

  /**
   * Runs one rollout and resolves with how it ended. Never rejects.
   * - `hangMs`: past it the tree is killed and the outcome is `hung`.
   * - `deadline`: past `runMs` (or the reward's `rewardMs`) plus its grace the tree is killed
   *   and the outcome is `overran`, naming the stage (see {@link StageDeadline}).
   * - `abort`: once aborted, the child is asked to stop; after `killGraceMs` without an
   *   answer the tree is killed and the outcome is `aborted` with the abort's reason.
   * - `onCost`: stores one receipt durably as soon as the child records it; the child's
   *   `ctx.recordCost` promise resolves once it did (a failed store is left to the final
   *   write of `outcome.costs`).
   */
  run(
    message: RunMessage,
    limits: { hangMs: number; killGraceMs: number; abort: AttemptAbort; deadline?: StageLimits; onCost?: (receipt: CostReceipt) => Promise<void> },
  ): Promise<AttemptOutcome> {
    const costs: CostReceipt[] = [];
    return new Promise<AttemptOutcome>((resolve) => {
      let settled = false;
      let graceTimer: NodeJS.Timeout | undefined;
      // A child runs many rollouts: each one's exit watch must go with it, or every finished
      // rollout (its closures, its spec) stays reachable for the child's whole life.
      let unwatchExit = (): void => undefined;
      let unlisten = (): void => undefined;
      const finish = (outcome: AttemptOutcome): void => {
        if (settled) return;
        settled = true;
        unwatchExit();
        clearTimeout(hangTimer);
        deadline?.clear();
        clearTimeout(graceTimer);
        if (this.onRunMessage === onMessage) this.onRunMessage = undefined;
        unlisten();
        resolve(outcome);
      };
      const onMessage = (msg: ChildMessage): void => {
        if (msg.type === 'cost') {
          costs.push(msg.receipt);
          // Stored as it is recorded, so a SIGKILLed worker's receipts still reach the Result. A
          // failed store answers too (the attempt's end writes `costs` again): the child never waits forever.
          const { seq } = msg;
          const answer = (): void => this.post({ type: 'cost-stored', seq });
          void (limits.onCost?.(msg.receipt) ?? Promise.resolve()).then(answer, answer);
        } else if (msg.type === 'log') this.onLog(msg);
        else if (msg.type === 'done') {
          // The child contained the attempt before answering (child-main answerRun).
          this.rollouts++;
          this.rssBytes = msg.rssBytes;
          const { reason } = limits.abort;
          if (reason !== undefined && msg.error?.type === 'Aborted') {
            finish({ type: 'aborted', reason, costs });
          } else {
            finish({ type: 'done', done: msg, costs });
          }
        }
      };
      // Set before killing, so the exit that follows is judged as what it is (hang, abort), not a crash.
      let killedFor: 'hang' | 'abort' | 'overran' | undefined;
      let overrun: Overrun | undefined;
      const rolloutSeq = ++this.sent;
      const deadline = limits.deadline
        ? new StageDeadline(limits.deadline, () => readRewardStage(this.stageBoard, rolloutSeq), (what) => {
            killedFor ??= 'overran';
            overrun = what;
            void this.kill();
          })
        : undefined;
      const hangTimer = setTimeout(() => {
        killedFor = 'hang';
        void this.kill();
      }, limits.hangMs);
      const onAbort = (): void => {
        this.cancel(String(limits.abort.reason));
        graceTimer = setTimeout(() => {
          killedFor ??= 'abort';
          void this.kill();
        }, limits.killGraceMs);
      };
      this.onRunMessage = onMessage;
      unwatchExit = this.onExit(() => {
        // Let the last IPC messages and stderr bytes land before judging the exit.
        setImmediate(() => {
          if (killedFor === 'hang') finish({ type: 'hung', hangMs: limits.hangMs, stderrTail: this.stderrTail, costs });
          else if (killedFor === 'overran' && overrun) finish({ type: 'overran', overrun, stderrTail: this.stderrTail, costs });
          else if (killedFor === 'abort' || limits.abort.reason !== undefined) finish({ type: 'aborted', reason: String(limits.abort.reason), costs });
          else finish({ type: 'crashed', exitCode: this.exit?.code ?? null, signal: this.exit?.signal ?? null, stderrTail: this.stderrTail, costs });
        });
      });
      if (limits.abort.reason !== undefined) onAbort();
      else unlisten = limits.abort.listen(onAbort);
      this.post(message);
    });
  }
}
