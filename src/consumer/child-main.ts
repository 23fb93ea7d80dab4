/**
 * Entry point of a rollout child process, forked by the worker's child pool. It hosts many
 * rollouts at once (child-rollout.ts runs each): it keeps the run definitions the worker sent
 * (definition-lru.ts), resolves Refs against its own installed code (under the allowlist), and
 * reports each rollout's outcome over IPC. It never talks to Redis, so a crash here loses no
 * state: the worker's main process sees the exit and re-dispatches the leases it held, blaming
 * only the rollout that caused it (child-guard.ts).
 */
import { Allowlist } from '../ref/index.js';
import { destroyLiveSandboxes, destroyLiveSandboxesSync, killSubtree, liveSandboxCount, useContainment, watchSpawns } from '../sandbox/index.js';
import { beforeExit, installGuards, startHeartbeat, whenBoardLost } from './child-guard.js';
import type { Batch, ChildMessage, DoneMessage, ParentMessage, RunMessage } from './child-protocol.js';
import { definitionEntry, runRollout, type ChildContext, type DefinitionEntry } from './child-rollout.js';
import { DefinitionLru, MAX_DEFINITIONS, maxDefinitionBytes } from './definition-lru.js';
import { STAGE_BOARD_FD, writeRewardStage } from './stage-board.js';

// Before any rollout code is loaded: its spawns are then seen without a syscall (spawn-watch.ts),
// and its exits and uncaught errors are blamed on it (child-guard.ts).
watchSpawns();
installGuards();

/** Messages sent this turn of the event loop, written together at its end (child-protocol.ts `Batch`). */
let outbox: ChildMessage[] = [];

function flush(): void {
  const messages = outbox;
  outbox = [];
  if (messages.length > 0) process.send?.(messages.length === 1 ? messages[0] : { type: 'batch', messages });
}

function send(message: ChildMessage): void {
  outbox.push(message);
  // A receipt goes at once (with what is before it): rollout code may end the process right after recording it.
  if (message.type === 'cost') flush();
  else if (outbox.length === 1) setImmediate(flush);
}
beforeExit(flush);

// Rollout code closed fd 4: the heartbeat and sync marks stop, so the worker must stop judging
// this child by them (and retires it once empty).
whenBoardLost(() => send({ type: 'board-lost' }));

let costSeq = 0;
/** Receipts sent and not yet reported stored by the worker, by seq. */
const costWaiters = new Map<number, () => void>();

const child: { -readonly [K in keyof ChildContext]: ChildContext[K] } = {
  /** The worker's allowlist, compiled once (the worker compiled it at its start, so it compiles here too). */
  allow: Allowlist.compile([]),
  maxOutputBytes: Number.POSITIVE_INFINITY,
  send,
  costStored() {
    const seq = ++costSeq;
    return { seq, stored: new Promise<void>((resolve) => costWaiters.set(seq, resolve)) };
  },
};

/** Definitions the worker sent, evicted exactly as its own copy of this cache is (set by init). */
let definitions = new DefinitionLru<DefinitionEntry>(MAX_DEFINITIONS, maxDefinitionBytes(64));

/** Rollouts running now, by seq: what aborts each. */
const running = new Map<number, (reason: string) => void>();

/**
 * Runs one rollout and answers the worker with its `done`. When it was the last one running here,
 * nothing any rollout started outlives it, whatever its code did: sandboxes still alive (an
 * aborted codeRunner whose own cleanup has not run yet) are destroyed and waited for (so their
 * launchers are reaped here, never orphaned to the worker), and what run code spawned itself is
 * killed by a walk of this process' own subtree. While other rollouts run, that waits for the
 * child to be quiet (or retired): their sandboxes and processes are theirs.
 */
async function answerRun(message: RunMessage): Promise<void> {
  const entry = definitions.get(message.key);
  let done: DoneMessage;
  if (!entry) {
    // Cannot happen while both sides evict alike; reported, never hung on.
    done = { type: 'done', seq: message.seq, kind: 'infrastructure', output: null, reward: null, error: { type: 'ChildProtocol', message: `rollout child has no definition ${message.key}` }, abandoned: false, recycle: true, rssBytes: 0 };
  } else {
    const rollout = runRollout(entry, message, child);
    running.set(message.seq, rollout.abort);
    try {
      done = await rollout.done;
    } finally {
      running.delete(message.seq);
    }
  }
  if (running.size === 0) {
    // Without a live sandbox (almost every rollout) nothing here awaits.
    if (liveSandboxCount() > 0) await destroyLiveSandboxes();
    if (running.size === 0) killSubtree('self', { includeRoot: false });
  }
  send(done);
}

process.on('message', (raw: ParentMessage | Batch<ParentMessage>) => {
  if (raw.type !== 'batch') return receive(raw);
  for (const message of raw.messages) receive(message);
});

function receive(raw: ParentMessage): void {
  switch (raw.type) {
    case 'init':
      child.allow = Allowlist.compile(raw.allow);
      child.maxOutputBytes = raw.maxOutputBytes;
      definitions = new DefinitionLru<DefinitionEntry>(MAX_DEFINITIONS, maxDefinitionBytes(raw.memoryMb));
      useContainment(raw.containment);
      try {
        writeRewardStage(STAGE_BOARD_FD, 0, 0, 0); // seq 0 is no rollout's: a check that the board is there
      } catch (error) {
        process.stderr.write(`rollout child: no stage board at fd ${STAGE_BOARD_FD} (it is started by RolloutChild): ${String(error)}\n`);
        process.exit(1);
      }
      startHeartbeat();
      send({ type: 'ready' });
      break;
    case 'define':
      definitions.add(raw.key, raw.bytes, definitionEntry(raw.definition));
      break;
    case 'run':
      void answerRun(raw);
      break;
    case 'cancel':
      running.get(raw.seq)?.(raw.reason);
      break;
    case 'cost-stored':
      costWaiters.get(raw.seq)?.();
      costWaiters.delete(raw.seq);
      break;
  }
}

// The worker closing our IPC channel means it is gone: take every attempt's processes, cgroups
// and work dirs with us rather than linger as an orphan (a child started with PR_SET_PDEATHSIG
// is SIGKILLed by the kernel first; then the sandboxes' own death signals and the next
// worker's sweep of dead attempts cover the rest).
process.on('disconnect', () => {
  destroyLiveSandboxesSync();
  killSubtree('self', { includeRoot: false });
  process.exit(0);
});
