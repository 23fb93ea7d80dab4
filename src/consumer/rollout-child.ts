import type { ChildProcess } from 'node:child_process';
import { closeSync } from 'node:fs';
import { killSubtree, sweepDeadSandboxes } from '../sandbox/index.js';
import { redactSecrets } from '../spec/redact-secrets.js';
import { ChildOutbox } from './child-outbox.js';
import type { Batch, ChildMessage, RunMessage } from './child-protocol.js';
import { blameExit, type KillCause } from './crash-blame.js';
import { DefinitionLru, MAX_DEFINITIONS, maxDefinitionBytes } from './definition-lru.js';
import { createStageBoard, monotonicMs, readCulprit, readHeartbeat, readRewardStage, readSyncEntry } from './stage-board.js';
import { StageDeadline } from './stage-deadline.js';
import type { AttemptDefinition, AttemptLimits, AttemptOutcome } from './attempt-outcome.js';
import { ChildStartError, ownNamespace, spawnChild } from './child-spawn.js';
import { outcomeOfDone, outcomeOfExit, type InFlight } from './flight-outcome.js';
import { MAX_ABANDONED_SHARED, STDERR_TAIL_BYTES, type RolloutChildOptions } from './rollout-child-options.js';

export { AttemptAbort } from './attempt-abort.js';
export type { AttemptDefinition, AttemptLimits, AttemptOutcome } from './attempt-outcome.js';
export { ChildStartError } from './child-spawn.js';
export { MAX_ABANDONED_SHARED, STDERR_TAIL_BYTES, type RolloutChildOptions } from './rollout-child-options.js';

/**
 * One forked child that runs many rollouts at once (a `solo` one, one at a time). It is the
 * leader of its own process group (`detached`), so a hard kill takes its whole tree, and where
 * `setpriv` exists it is started with PR_SET_PDEATHSIG = SIGKILL, so it dies with the worker even
 * when its event loop is stuck. When it dies, each rollout it held is judged on its own
 * (crash-blame.ts). After a child is gone, the worker removes what its attempts left (work dirs,
 * cgroups), so that never depends on code in the killed process.
 *
 * Per rollout, the worker enforces `hangMs`, the outside deadline of `runMs`/`rewardMs` and the
 * kill grace of an abort. Killing the child for one rollout's limit is done only when that rollout
 * is alone in it, or when the child is blocked inside that rollout's code (the stage board's sync
 * entry); otherwise the child is asked to abort it (its loop answers at once), and a loop blocked
 * elsewhere is the pool's watchdog's to judge ({@link blockedFor}).
 */
export class RolloutChild {
  private stderrTail = '';
  /** Every secret value sent to this child (name → value), to keep them out of the stderr it reports. */
  private readonly secretValues = new Map<string, string>();
  private exit: { code: number | null; signal: string | null } | undefined;
  private readonly exitWaiters = new Set<() => void>();
  private readonly inFlight = new Map<number, InFlight>();
  /** Messages to the child, sent together at the end of each turn of the event loop. */
  private readonly outbox: ChildOutbox;
  /** The run definitions the child holds, evicted exactly as the child evicts them. */
  private readonly definitions: DefinitionLru;
  /** Stage-board slots freed by finished rollouts (reused first), and the next never used. */
  private readonly freeSlots: number[] = [];
  private nextSlot = 0;
  /** Rollouts sent to the child: the child numbers them the same way. */
  private sent = 0;
  private killCause: KillCause | undefined;
  private diedUnkilled = false;
  /** The child's board is gone (rollout code closed it): no heartbeat, no sync marks to judge by. */
  private boardLost = false;
  /** Rollouts this child has finished. */
  rollouts = 0;
  /** Rollouts of it that ended while their code may still run (see {@link MAX_ABANDONED_SHARED}). */
  private abandoned = 0;
  /** Resident set size reported after the last rollout, bytes. */
  rssBytes = 0;
  /** Takes no more rollouts: retired once its last one ends. */
  draining = false;
  /** Rollouts placed on it by the pool and not yet released (includes ones still being set up). */
  load = 0;
  /** Rollouts ever placed on it by the pool (`maxRolloutsPerChild` counts these). */
  placed = 0;
  /** When it last became empty (performance.now() ms), for retiring long-idle extra children. */
  idleSince = 0;

  private constructor(
    private readonly proc: ChildProcess,
    private readonly options: RolloutChildOptions,
    /** The worker's fd of this child's stage board (see stage-board.ts). */
    private readonly stageBoard: number,
  ) {
    this.definitions = new DefinitionLru(MAX_DEFINITIONS, maxDefinitionBytes(options.memoryMb));
    this.outbox = new ChildOutbox(proc);
    proc.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    // Rollout code writing to stdout must not fill the pipe and block the child.
    proc.stdout?.resume();
    proc.on('message', (message: ChildMessage | Batch<ChildMessage>) => {
      if (message.type !== 'batch') return this.onMessage(message);
      for (const one of message.messages) this.onMessage(one);
    });
    proc.on('exit', (code, signal) => {
      this.exit = { code, signal };
      // Why it died is what it was when it died (a retire after that is no cause).
      const cause = this.killCause;
      this.diedUnkilled = cause === undefined;
      const waiters = [...this.exitWaiters];
      this.exitWaiters.clear();
      for (const waiter of waiters) waiter();
      // Let the last IPC messages and stderr bytes land before judging the exit; the board is
      // read then (the culprit), and closed after.
      setImmediate(() => {
        this.judgeExit(cause);
        closeSync(stageBoard);
      });
    });
    proc.on('error', () => {
      // 'exit' follows for spawn failures of a forked node; nothing else to do here.
    });
  }

  /** The child's pid (undefined only if the fork itself failed). */
  get pid(): number | undefined {
    return this.proc.pid;
  }

  get memoryMb(): number {
    return this.options.memoryMb;
  }

  get kind(): 'shared' | 'solo' {
    return this.options.kind;
  }

  /** True once the process has exited. */
  get exited(): boolean {
    return this.exit !== undefined;
  }

  /** True when the child exited without the worker killing it (a crash). */
  get diedOnItsOwn(): boolean {
    return this.diedUnkilled;
  }

  /** Rollouts sent to the child and not answered. */
  get running(): number {
    return this.inFlight.size;
  }

  /**
   * Forks a child and waits for its `ready`.
   * @throws ChildStartError with the real exit code and stderr tail when it dies first or times out.
   */
  static async start(options: RolloutChildOptions): Promise<RolloutChild> {
    // The stage board goes to the child's fd 4 (STAGE_BOARD_FD).
    const stageBoard = createStageBoard();
    let proc: ChildProcess;
    try {
      proc = spawnChild(options, stageBoard);
    } catch (error) {
      closeSync(stageBoard);
      throw error;
    }
    const child = new RolloutChild(proc, options, stageBoard);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        void child.kill();
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
      child.outbox.post({ type: 'init', allow: options.allow, containment: options.containment, maxOutputBytes: options.maxOutputBytes, memoryMb: options.memoryMb });
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

  /** True when the child holds the definition `key` (nothing is sent, nothing moves in its cache). */
  knows(key: string): boolean {
    return this.definitions.peek(key);
  }

  /**
   * How long the child's event loop has not turned, ms (0 for a child that exited, or whose board
   * is lost: then there is no heartbeat to judge by).
   */
  loopSilenceMs(): number {
    if (this.exit || this.boardLost) return 0;
    const beat = readHeartbeat(this.stageBoard);
    return beat === undefined ? 0 : Math.max(0, monotonicMs() - beat);
  }

  /** The rollout whose code the child is calling synchronously now, as its board says (unknown once the board is lost). */
  private syncSeq(): number | undefined {
    return this.boardLost ? undefined : readSyncEntry(this.stageBoard)?.seq;
  }

  /**
   * The pool's watchdog: kills the child when it holds two rollouts or more and its event loop
   * has not turned for `blockedLoopMs`. Its rollouts are then judged as in a blocked loop: the
   * one whose code it was in (stage board) retries alone, the others without cost; when it was
   * in no rollout's code they all retry alone. True when it killed.
   */
  blockedFor(blockedLoopMs: number): boolean {
    if (this.exit || this.killCause || this.inFlight.size < 2 || this.loopSilenceMs() < blockedLoopMs) return false;
    this.killFor({ kind: 'blocked', syncSeq: this.syncSeq() });
    return true;
  }

  /**
   * SIGKILLs the child's whole process tree (a walk of its own subtree, never of the machine);
   * resolves once the child has exited and what its attempts left on disk and in cgroups is
   * removed. Rollouts still in it end as the retiring of a child is judged (never their fault).
   */
  async kill(): Promise<void> {
    this.killCause ??= { kind: 'retired' };
    if (this.proc.pid !== undefined && !this.exit) killSubtree(this.proc.pid, { includeRoot: true });
    await new Promise<void>((resolve) => this.onExit(resolve));
    if (this.proc.pid !== undefined) await this.reclaim(this.proc.pid);
  }

  private killFor(cause: KillCause): void {
    this.killCause ??= cause;
    void this.kill();
  }

  private reclaiming: Promise<void> | undefined;

  /** Removes the sandboxes this (dead) child made; once per child. */
  private reclaim(pid: number): Promise<void> {
    // In a namespace of its own the child is not `pid` (that is its unshare): sweep every dead creator.
    const creatorPid = ownNamespace(this.options.containment) ? undefined : pid;
    this.reclaiming ??= sweepDeadSandboxes({ ...(creatorPid !== undefined ? { creatorPid } : {}), containment: this.options.containment }).then(() => undefined, () => undefined);
    return this.reclaiming;
  }

  /**
   * Runs one rollout in the child and resolves with how it ended. Never rejects.
   * - `hangMs`: past it the rollout is judged hung (`hung`, re-dispatched as before): its tree is
   *   killed when it is alone or the child is blocked in its code; in a shared child whose loop
   *   turns, the child is asked to abort it, and killed only if it has not answered after `killGraceMs`.
   * - `deadline`: past `runMs` (or the reward's `rewardMs`) plus its grace, when alone or blocked in
   *   its code, the tree is killed and the outcome is `overran`, naming the stage (see
   *   {@link StageDeadline}); in a shared child its own timer answers (or the watchdog judges).
   * - `abort`: once aborted, the child is asked to abort it; after `killGraceMs` without an answer
   *   the tree is killed (alone, blocked in its code, or a loop silent that long) and the outcome
   *   is `aborted` with the abort's reason.
   * - `onCost`: stores one receipt durably as soon as the child records it; the child's
   *   `ctx.recordCost` promise resolves once it did (a failed store is left to the final write of
   *   `outcome.costs`).
   * @throws Error (a bug of the caller) when the child lacks the definition and none is given.
   */
  run(definition: AttemptDefinition, rollout: Omit<RunMessage, 'type' | 'seq' | 'slot' | 'key'>, limits: AttemptLimits): Promise<AttemptOutcome> {
    if (!definition.definition && !this.definitions.peek(definition.key)) throw new Error(`rollout child ${this.pid} lacks definition ${definition.key} and none was given`);
    return new Promise<AttemptOutcome>((resolve) => {
      if (this.exit || this.killCause) {
        resolve({ type: 'crashed', blame: 'neighbour', exitCode: this.exit?.code ?? null, signal: this.exit?.signal ?? null, stderrTail: this.reportedTail(), costs: [] });
        return;
      }
      const seq = ++this.sent;
      const slot = this.freeSlots.pop() ?? this.nextSlot++;
      let hangTimer: NodeJS.Timeout | undefined;
      let graceTimer: NodeJS.Timeout | undefined;
      let deadline: StageDeadline | undefined;
      let unlisten = (): void => undefined;
      const flight: InFlight = {
        seq,
        slot,
        limits,
        costs: [],
        hangAsked: false,
        settle: (outcome) => {
          if (this.inFlight.get(seq) !== flight) return;
          this.inFlight.delete(seq);
          this.freeSlots.push(slot);
          clearTimeout(hangTimer);
          clearTimeout(graceTimer);
          deadline?.clear();
          unlisten();
          resolve(outcome);
        },
      };
      this.inFlight.set(seq, flight);
      if (limits.deadline) {
        deadline = new StageDeadline(limits.deadline, () => readRewardStage(this.stageBoard, slot, seq), (overrun) => {
          flight.overrun = overrun;
          this.killIfTheirs(flight, 'overran');
        });
      }
      const onHang = (): void => {
        if (this.killIfTheirs(flight, 'hang')) return;
        if (!flight.hangAsked) {
          flight.hangAsked = true;
          this.outbox.post({ type: 'cancel', seq, reason: 'hang' });
          hangTimer = setTimeout(onHang, limits.killGraceMs);
        } else if (this.loopSilenceMs() >= limits.killGraceMs) {
          this.killFor({ kind: 'blocked', syncSeq: this.syncSeq() });
        } else {
          // The loop turns and it did not answer its abort: it is the one hung.
          this.killFor({ kind: 'limit', seq, limit: 'hang' });
        }
      };
      hangTimer = setTimeout(onHang, limits.hangMs);
      const onAbort = (): void => {
        this.outbox.post({ type: 'cancel', seq, reason: String(limits.abort.reason) });
        graceTimer = setTimeout(() => {
          if (this.killIfTheirs(flight, 'abort')) return;
          if (this.loopSilenceMs() >= limits.killGraceMs) this.killFor({ kind: 'blocked', syncSeq: this.syncSeq() });
        }, limits.killGraceMs);
      };
      this.sendRun(definition, { ...rollout, type: 'run', seq, slot, key: definition.key });
      if (limits.abort.reason !== undefined) onAbort();
      else unlisten = limits.abort.listen(onAbort);
    });
  }

  /**
   * Text the child wrote to stderr (`text`, by default its tail), for a report stored in Redis and
   * shown by `status`: with the value of every secret this child was given replaced by
   * `[secret NAME]`. Rollouts of other runs share the child and its stderr, and the caller redacts
   * only the secrets of its own spec.
   */
  private reportedTail(text: string = this.stderrTail): string {
    return this.secretValues.size === 0 ? text : redactSecrets(text, Object.fromEntries(this.secretValues));
  }

  /** Sends the definition when the child lacks it, then the run (the same cache operations the child applies). */
  private sendRun(definition: AttemptDefinition, message: RunMessage): void {
    if (!this.definitions.has(definition.key) && definition.definition) {
      for (const [name, value] of Object.entries(definition.definition.secrets)) this.secretValues.set(name, value);
      this.definitions.add(definition.key, definition.bytes, true);
      this.outbox.post({ type: 'define', key: definition.key, bytes: definition.bytes, definition: definition.definition });
    }
    this.outbox.post(message);
  }

  /**
   * Kills the child for rollout `flight`'s limit when that is its own doing: it is alone in the
   * child, or the child is blocked inside its code. True when it killed.
   */
  private killIfTheirs(flight: InFlight, limit: 'hang' | 'overran' | 'abort'): boolean {
    if (this.exit || this.killCause) return true;
    if (this.inFlight.size > 1 && this.syncSeq() !== flight.seq) return false;
    this.killFor({ kind: 'limit', seq: flight.seq, limit });
    return true;
  }

  private onMessage(message: ChildMessage): void {
    if (message.type === 'log') return this.options.onLog(message);
    if (message.type === 'board-lost') {
      this.boardLost = true;
      this.draining = true;
      return;
    }
    if (message.type === 'cost') {
      const flight = this.inFlight.get(message.rollout);
      flight?.costs.push(message.receipt);
      // Stored as it is recorded, so a SIGKILLed worker's receipts still reach the Result. A
      // failed store answers too (the attempt's end writes `costs` again): the child never waits forever.
      const { seq } = message;
      const answer = (): void => this.outbox.post({ type: 'cost-stored', seq });
      void (flight?.limits.onCost?.(message.receipt) ?? Promise.resolve()).then(answer, answer);
      return;
    }
    if (message.type !== 'done') return;
    const flight = this.inFlight.get(message.seq);
    if (!flight) return;
    // The child contained the attempt before answering (child-main answerRun).
    this.rollouts++;
    this.rssBytes = message.rssBytes;
    if (message.abandoned) this.abandoned++;
    const worn = this.rssBytes > this.options.maxChildRssMb * 1024 * 1024;
    const spent = message.abandoned && (this.options.kind === 'solo' || this.abandoned >= MAX_ABANDONED_SHARED);
    if (message.recycle || message.crash !== undefined || worn || spent) this.draining = true;
    flight.settle(outcomeOfDone(flight, message, (text) => this.reportedTail(text)));
  }

  /** Settles every rollout the dead child held, each by its own verdict. */
  private judgeExit(cause: KillCause | undefined): void {
    const facts = { cause, culprit: readCulprit(this.stageBoard), inFlight: this.inFlight.size };
    for (const flight of [...this.inFlight.values()]) {
      const verdict = blameExit(flight.seq, flight.limits.abort.reason !== undefined, facts);
      flight.settle(outcomeOfExit(flight, verdict, this.exit, this.reportedTail()));
    }
  }
}
