import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { AttemptAbort, RolloutChild } from '../../../dist/consumer/rollout-child.js';
import { detectContainment } from '../../../dist/sandbox/index.js';
import type { RunMessage } from '../../../src/consumer/child-protocol.js';
import { makeSpec } from '../../helpers/raw-queue.js';

// A full collection on demand, to see what a finished rollout leaves reachable.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('RolloutChild', () => {
  it('keeps nothing of a finished rollout: many rollouts on one child leave none of their messages reachable', async () => {
    const child = await RolloutChild.start({
      memoryMb: 256, execArgv: [], allow: ['rq-fixtures/*'], env: { PATH: process.env.PATH }, startTimeoutMs: 30_000,
      onLog: () => undefined, containment: detectContainment('process-group'), maxOutputBytes: 1024 * 1024,
    });
    try {
      // One rollout, in a frame of its own: only the child may still hold its message afterwards.
      const runOne = async (key: string): Promise<WeakRef<RunMessage>> => {
        const message: RunMessage = { type: 'run', spec: makeSpec('child', key), taskId: key, attempt: 1, secrets: {} };
        const outcome = await child.run(message, { hangMs: 30_000, killGraceMs: 1_000, abort: new AttemptAbort() });
        expect(outcome.type).toBe('done');
        return new WeakRef(message);
      };
      const refs: WeakRef<RunMessage>[] = [];
      for (let i = 0; i < 5; i++) refs.push(await runOne(`r-${i}`));
      // WeakRefs made in a job stay alive until it ends: let it end before collecting.
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      expect(refs.map((ref, i) => (ref.deref() !== undefined ? i : -1)).filter((i) => i >= 0)).toEqual([]);
    } finally {
      await child.kill();
    }
  });
});
