import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeRunner } from '../../../src/runners/index.js';
import { detectContainment, sweepDeadSandboxes, useContainment, workRoot, type Containment } from '../../../src/sandbox/index.js';
import { ownIdentity } from '../../../src/sandbox/process-identity.js';
import { ModelError } from '../../../src/spec/index.js';
import { fakeContext, type FakeContext } from '../runners/fake-context.js';

const CASES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'cases');
// BR-36: touches 1.2 GiB and prints its peak RSS; exact input of the case.
const BR36_MAIN = readFileSync(path.join(CASES, 'BR-36', 'main.py'), 'utf8');
const BR36_TASK = JSON.parse(readFileSync(path.join(CASES, 'BR-36', 'tasks.jsonl'), 'utf8').split('\n')[0] as string) as Record<string, unknown>;
const python = codeRunner({ entrypoint: 'main.py', command: ['python3', 'main.py'], timeoutMs: 15_000 });

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: unknown) => err as Error,
  );
}

/** Work dirs and cgroups of this context's lease still on the machine. */
function leftovers(ctx: FakeContext, containment: Containment): string[] {
  const prefix = `${ctx.leaseId}.`;
  const roots = [workRoot()];
  if (containment.cgroup?.version === 1) roots.push(containment.cgroup.memory, containment.cgroup.pids);
  if (containment.cgroup?.version === 2) roots.push(containment.cgroup.root);
  return roots.flatMap((root) => (existsSync(root) ? readdirSync(root).filter((n) => n.startsWith(prefix)).map((n) => path.join(root, n)) : []));
}

/** Every way a codeRunner attempt ends, each leaving nothing behind. */
async function everyOutcomeLeavesNothing(containment: Containment): Promise<void> {
  const node = (timeoutMs: number) => codeRunner({ entrypoint: 'main.js', timeoutMs });
  const scratch = "require('fs').writeFileSync('scratch.bin', Buffer.alloc(1 << 20));";
  const outcomes: Array<[string, (ctx: FakeContext) => Promise<unknown>]> = [
    ['ok', (ctx) => node(10_000)(`${scratch} console.log(1)`, { id: 'o' }, ctx)],
    ['non-zero exit', (ctx) => rejection(node(10_000)(`${scratch} process.exit(3)`, { id: 'e' }, ctx))],
    ['time limit', (ctx) => rejection(node(800)(`${scratch} setInterval(() => {}, 1000)`, { id: 't' }, ctx))],
    ['memory limit', (ctx) => rejection(python(BR36_MAIN, BR36_TASK, ctx))],
  ];
  for (const [label, attempt] of outcomes) {
    const ctx = fakeContext({ memoryMb: 256 });
    await attempt(ctx);
    expect({ label, left: leftovers(ctx, containment) }).toEqual({ label, left: [] });
  }
  const controller = new AbortController();
  const ctx = fakeContext({ signal: controller.signal });
  const aborted = rejection(node(60_000)(`${scratch} console.log('up'); setInterval(() => {}, 1000)`, { id: 'c' }, ctx));
  setTimeout(() => controller.abort('cancelled'), 300);
  expect((await aborted).name).toBe('AbortError');
  expect({ label: 'cancel', left: leftovers(ctx, containment) }).toEqual({ label: 'cancel', left: [] });
}

describe('memory and disk at the strongest level of this host (cgroup per attempt)', () => {
  let containment: Containment;
  beforeAll(() => {
    containment = detectContainment('auto');
    useContainment(containment);
  });

  it('the host gives a cgroup (else the fallback below is all there is)', () => {
    expect(containment.cgroup).not.toBeNull();
  });

  it('BR-36: 1.2 GiB under memoryMb 256 → model MemoryLimit naming the limit and the peak', async () => {
    const err = await rejection(python(BR36_MAIN, BR36_TASK, fakeContext({ memoryMb: 256 })));
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).type).toBe('MemoryLimit');
    expect(err.message).toContain('memory limit of 256 MiB');
    expect(err.message).toMatch(/peak \d+ MiB/);
  });

  it('the same artifact under memoryMb 2048 is ok and reports its peak (peakRssBytes)', async () => {
    const output = await python(BR36_MAIN, BR36_TASK, fakeContext({ memoryMb: 2048 }));
    expect(output.stdout).toContain('Answer: 5');
    expect(output.peakRssBytes).toBeGreaterThan(1024 * 1024 * 1024);
  });

  it('ok, non-zero exit, time limit, memory limit and cancel leave no work dir and no cgroup', async () => {
    await everyOutcomeLeavesNothing(containment);
  });
});

describe('memory and disk at the fallback (RLIMIT_DATA per process, no cgroup)', () => {
  let containment: Containment;
  beforeAll(() => {
    containment = detectContainment('process-group');
    useContainment(containment);
  });
  afterAll(() => useContainment(detectContainment('auto')));

  it('BR-36 under memoryMb 256: the allocation fails (MemoryError) → model NonZeroExit; no peak is measured', async () => {
    const err = await rejection(python(BR36_MAIN, BR36_TASK, fakeContext({ memoryMb: 256 })));
    expect((err as ModelError).type).toBe('NonZeroExit');
    expect(err.message).toContain('MemoryError');
    const ok = await python('import sys, json; json.load(sys.stdin); print("Answer: 5")', BR36_TASK, fakeContext());
    expect(ok.peakRssBytes).toBeNull();
  });

  it('every outcome leaves no work dir', async () => {
    await everyOutcomeLeavesNothing(containment);
  });
});

describe('sweep of dead attempts', () => {
  it('removes dirs whose creator is dead, never a live creator\'s or a foreign one', async () => {
    const me = ownIdentity();
    const dead = spawnSync('true').pid as number; // exited and reaped: no such pid now
    const names = {
      dead: `sweep-test.dead.a1-p${dead}s0n${me.pidNamespace}-AbC123`,
      live: `sweep-test.live.a1-p${me.pid}s${me.startTicks}n${me.pidNamespace}-AbC123`,
      reused: `sweep-test.reused.a1-p${me.pid}s${me.startTicks + 1}n${me.pidNamespace}-AbC123`,
      otherNamespace: `sweep-test.ns.a1-p${dead}s0n${me.pidNamespace + 1}-AbC123`,
      foreign: `sweep-test.foreign.a1-AbC123`,
    };
    for (const name of Object.values(names)) mkdirSync(path.join(workRoot(), name, 'sub'), { recursive: true });
    try {
      const report = await sweepDeadSandboxes({ containment: detectContainment('process-group') });
      expect(report.dirs).toBeGreaterThanOrEqual(2);
      const left = (name: string): boolean => existsSync(path.join(workRoot(), name));
      expect({ dead: left(names.dead), reused: left(names.reused) }).toEqual({ dead: false, reused: false });
      expect({ live: left(names.live), otherNamespace: left(names.otherNamespace), foreign: left(names.foreign) }).toEqual({ live: true, otherNamespace: true, foreign: true });
    } finally {
      for (const name of Object.values(names)) rmSync(path.join(workRoot(), name), { recursive: true, force: true });
    }
  });
});
