import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { AttemptAbort, RolloutChild, type AttemptOutcome } from '../../../dist/consumer/rollout-child.js';
import { splitSpec } from '../../../dist/consumer/rollout-definition.js';
import { detectContainment } from '../../../dist/sandbox/index.js';
import type { RolloutSpec } from '../../../src/spec/index.js';
import { fixture, makeSpec } from '../../helpers/raw-queue.js';

// A full collection on demand, to see what a finished rollout leaves reachable.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function startChild(kind: 'shared' | 'solo' = 'shared', onLog: () => void = () => undefined): Promise<RolloutChild> {
  return RolloutChild.start({
    memoryMb: 256, kind, execArgv: [], allow: ['rq-fixtures/*'], env: { PATH: process.env.PATH }, startTimeoutMs: 30_000,
    onLog, containment: detectContainment('process-group'), maxOutputBytes: 1024 * 1024, maxRolloutsPerChild: Infinity, maxChildRssMb: 2048,
  });
}

/** Runs `spec` in `child`, sending its definition when the child lacks it; returns the outcome and what was sent. */
function runIn(child: RolloutChild, spec: RolloutSpec, limits: { hangMs?: number; abort?: AttemptAbort; secrets?: Record<string, string> } = {}): { outcome: Promise<AttemptOutcome>; sentDefinition: boolean } {
  const split = splitSpec(spec, limits.secrets ?? {});
  const sentDefinition = !child.knows(split.key);
  const outcome = child.run(
    { key: split.key, bytes: split.bytes, ...(sentDefinition ? { definition: split.definition() } : {}) },
    { ...split.own, taskId: String(spec.task.id), attempt: 1 },
    { hangMs: limits.hangMs ?? 30_000, killGraceMs: 1_000, abort: limits.abort ?? new AttemptAbort() },
  );
  return { outcome, sentDefinition };
}

describe('RolloutChild', () => {
  it('keeps nothing of a finished rollout: many rollouts on one child leave none of their messages reachable', async () => {
    const child = await startChild();
    try {
      // One rollout, in a frame of its own: only the child may still hold its message afterwards.
      const runOne = async (key: string): Promise<WeakRef<object>> => {
        const split = splitSpec(makeSpec('child', key), {});
        const rollout = { ...split.own, taskId: key, attempt: 1 };
        const definition = { key: split.key, bytes: split.bytes, ...(child.knows(split.key) ? {} : { definition: split.definition() }) };
        const outcome = await child.run(definition, rollout, { hangMs: 30_000, killGraceMs: 1_000, abort: new AttemptAbort() });
        expect(outcome.type).toBe('done');
        return new WeakRef(rollout);
      };
      const refs: WeakRef<object>[] = [];
      for (let i = 0; i < 5; i++) refs.push(await runOne(`r-${i}`));
      // WeakRefs made in a job stay alive until it ends: let it end before collecting.
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      expect(refs.map((ref, i) => (ref.deref() !== undefined ? i : -1)).filter((i) => i >= 0)).toEqual([]);
    } finally {
      await child.kill();
    }
  });

  it('runs many rollouts at once in one process, each with its own task, and answers each as it ends, not in the order sent', async () => {
    const child = await startChild();
    const dir = mkdtempSync(path.join(tmpdir(), 'rq-child-'));
    try {
      const releaseFile = path.join(dir, 'release');
      // 20 rollouts wait for a file the test writes only once 20 others, sent after them, have ended.
      const held = Array.from({ length: 20 }, (_, i) => makeSpec('many', `held-${i}`, { task: { id: `held-${i}`, releaseFile }, run: fixture('waitsForFile') }));
      const quick = Array.from({ length: 20 }, (_, i) => makeSpec('many', `quick-${i}`));
      const heldRuns = held.map((spec) => runIn(child, spec));
      const quickRuns = quick.map((spec) => runIn(child, spec));
      // The run's shared part went once per definition; every other rollout carried its task and lease only.
      expect([...heldRuns, ...quickRuns].filter((run) => run.sentDefinition)).toHaveLength(2);
      let heldEnded = 0;
      for (const run of heldRuns) void run.outcome.then(() => heldEnded++);
      for (const [i, { outcome }] of quickRuns.entries()) expect(await outcome).toMatchObject({ type: 'done', done: { kind: 'ok', output: { pid: child.pid, taskId: `quick-${i}` } } });
      expect(heldEnded).toBe(0);
      expect(child.running).toBe(20);
      writeFileSync(releaseFile, '');
      for (const [i, { outcome }] of heldRuns.entries()) expect(await outcome).toMatchObject({ type: 'done', done: { kind: 'ok', output: { pid: child.pid, taskId: `held-${i}` } } });
    } finally {
      await child.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rollouts of one artifact and Refs share a definition whatever their task, run id or meta; another artifact is a new one', async () => {
    const child = await startChild();
    try {
      const sent = [
        runIn(child, makeSpec('runa', 'x', { meta: { candidate: 1 } })),
        runIn(child, makeSpec('runa', 'y', { meta: { candidate: 2 } })),
        runIn(child, makeSpec('runb', 'z', { runAttemptId: 'other', meta: { candidate: 3 } })),
        runIn(child, makeSpec('runb', 'w', { rendered: 'another artifact' })),
      ];
      expect(sent.map((run) => run.sentDefinition)).toEqual([true, false, false, true]);
      for (const { outcome } of sent) expect(await outcome).toMatchObject({ type: 'done', done: { kind: 'ok' } });
    } finally {
      await child.kill();
    }
  });

  it('a cancel of one rollout aborts it alone: its neighbours in the child run on and end ok', async () => {
    const child = await startChild();
    try {
      const abort = new AttemptAbort();
      const victim = runIn(child, makeSpec('cancel1', 'victim', { task: { id: 'victim', delayMs: 60_000 } }), { abort });
      const neighbours = Array.from({ length: 5 }, (_, i) => runIn(child, makeSpec('cancel1', `n-${i}`, { task: { id: `n-${i}`, delayMs: 800 } })));
      abort.abort('cancelled');
      expect(await victim.outcome).toMatchObject({ type: 'done', done: { kind: 'caller', error: { type: 'Cancelled' } } });
      for (const neighbour of neighbours) expect(await neighbour.outcome).toMatchObject({ type: 'done', done: { kind: 'ok' } });
      expect(child.exited).toBe(false);
    } finally {
      await child.kill();
    }
  });

  it('a hung rollout in a child whose loop turns is asked to abort at hangMs and judged hung alone; the child stays up for the others', async () => {
    const child = await startChild();
    try {
      const hung = runIn(child, makeSpec('hang1', 'hung', { run: fixture('blocksForever') }), { hangMs: 300 });
      const other = runIn(child, makeSpec('hang1', 'other', { task: { id: 'other', delayMs: 1500 } }));
      expect(await hung.outcome).toMatchObject({ type: 'hung', hangMs: 300 });
      expect(await other.outcome).toMatchObject({ type: 'done', done: { kind: 'ok' } });
      expect(child.exited).toBe(false);
      // Its code may still run there, but one abandoned rollout does not retire a shared child (MAX_ABANDONED_SHARED).
      expect(child.draining).toBe(false);
    } finally {
      await child.kill();
    }
  });

  it('a child dying with several rollouts in it judges each: the one that called process.exit is to blame, the others are not', async () => {
    const child = await startChild();
    try {
      const others = Array.from({ length: 3 }, (_, i) => runIn(child, makeSpec('blame', `n-${i}`, { task: { id: `n-${i}`, delayMs: 30_000 } })));
      // Its exit comes after a timer: the scope of the rollout follows its code there.
      const culprit = runIn(child, makeSpec('blame', 'culprit', { run: fixture('exitsLater', { code: 7, afterMs: 200 }) }));
      expect(await culprit.outcome).toMatchObject({ type: 'crashed', blame: 'self', exitCode: 7 });
      for (const other of others) expect(await other.outcome).toMatchObject({ type: 'crashed', blame: 'neighbour', exitCode: 7 });
    } finally {
      await child.kill();
    }
  });

  it('a receipt recorded right before the rollout ends its process reaches the worker with the crash', async () => {
    const child = await startChild();
    try {
      const spec = makeSpec('paid', 'x', { run: fixture('paysThenExits', { usd: 0.5, code: 3 }) });
      expect(await runIn(child, spec).outcome).toMatchObject({ type: 'crashed', blame: 'self', exitCode: 3, costs: [{ id: `${spec.leaseId}-1`, usd: 0.5 }] });
    } finally {
      await child.kill();
    }
  });

  it("a crash report carries the shared stderr with every secret the child was given redacted, a neighbour's too", async () => {
    const child = await startChild();
    try {
      const leaker = makeSpec('leak', 'x', { run: fixture('leaksSecret'), task: { id: 'x', secretName: 'RQ_NEIGHBOUR_KEY' }, sandbox: { env: ['RQ_NEIGHBOUR_KEY'], memoryMb: 256 } });
      expect(await runIn(child, leaker, { secrets: { RQ_NEIGHBOUR_KEY: 'sk-neighbour-0123456789' } }).outcome).toMatchObject({ type: 'done' });
      const crashed = await runIn(child, makeSpec('other', 'y', { run: fixture('exits', { code: 5 }) })).outcome;
      expect(crashed.type === 'crashed' && crashed.stderrTail).toContain('stderr [secret RQ_NEIGHBOUR_KEY]');
      expect(JSON.stringify(crashed)).not.toContain('sk-neighbour-0123456789');
    } finally {
      await child.kill();
    }
  });

  it('a signal nobody can pin on one rollout blames them all as shared; a solo child with one rollout blames it', async () => {
    const shared = await startChild();
    try {
      const runs = [
        runIn(shared, makeSpec('sig', 'a', { run: fixture('segfaultsLater', { afterMs: 200 }) })),
        runIn(shared, makeSpec('sig', 'b', { task: { id: 'b', delayMs: 30_000 } })),
      ];
      for (const run of runs) expect(await run.outcome).toMatchObject({ type: 'crashed', blame: 'shared', signal: 'SIGSEGV' });
    } finally {
      await shared.kill();
    }
    const solo = await startChild('solo');
    try {
      expect(await runIn(solo, makeSpec('sig', 'alone', { run: fixture('segfaultsLater', { afterMs: 0 }) })).outcome).toMatchObject({ type: 'crashed', blame: 'self', signal: 'SIGSEGV' });
    } finally {
      await solo.kill();
    }
  });

  it('an exception rollout code leaves uncaught ends that rollout alone as its own crash; the child finishes the others, then drains', async () => {
    const child = await startChild();
    try {
      const thrower = runIn(child, makeSpec('uncaught', 'thrower', { run: fixture('throwsLater', { message: 'stray callback', afterMs: 100 }) }));
      const other = runIn(child, makeSpec('uncaught', 'other', { task: { id: 'other', delayMs: 600 } }));
      const crashed = await thrower.outcome;
      expect(crashed).toMatchObject({ type: 'crashed', blame: 'self', exitCode: null, signal: null });
      expect(crashed.type === 'crashed' && crashed.stderrTail).toContain('stray callback');
      expect(await other.outcome).toMatchObject({ type: 'done', done: { kind: 'ok' } });
      expect(child.exited).toBe(false);
      expect(child.draining).toBe(true);
    } finally {
      await child.kill();
    }
  });
});
