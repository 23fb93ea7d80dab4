import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { DeliveryFence } from '../../../src/producer/delivery-fence.js';
import type { CoordinatorLease } from '../../../src/producer/coordinator-lease.js';
import type { LeaseTracker } from '../../../src/producer/lease-tracker.js';
import type { RunStore } from '../../../src/producer/run-store.js';

// ioredis' exact message when commandTimeout passes (what a coordinator resumed from SIGSTOP, or
// facing a Redis that does not answer, gets: CI under load ended a run "Command timed out").
const timedOut = (): Error => new Error('Command timed out');

function fenceWith(store: Partial<RunStore>): { fence: DeliveryFence; warnings: string[] } {
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push((JSON.parse(line) as { msg: string }).msg) });
  const lease = { holds: () => true, epoch: 0, token: 't' } as unknown as CoordinatorLease;
  const tracker = { pendingLeases: () => [], dropDelivered: () => 0 } as unknown as LeaseTracker;
  const fence = new DeliveryFence('r1', lease, store as RunStore, tracker, logger, async () => undefined);
  return { fence, warnings };
}

describe('DeliveryFence: a Redis command timeout while delivering', () => {
  it('acknowledges again until Redis answers (an acknowledgement is counted once), warning once', async () => {
    let calls = 0;
    const { fence, warnings } = fenceWith({
      acknowledgeMany: async () => {
        calls++;
        if (calls < 3) throw timedOut();
        return { kinds: ['new' as const], completed: true, delivered: 1 };
      },
    } as Partial<RunStore>);
    await expect(fence.acknowledge([{ leaseId: 'r1.a', kind: 'ok' }], () => false, true)).resolves.toEqual({ completed: true, delivered: 1 });
    expect(calls).toBe(3);
    expect(warnings.filter((msg) => msg.includes('Redis did not answer a delivery command in time'))).toHaveLength(1);
  });

  it('gives up silently once the session stopped, and throws any other error as before', async () => {
    let stopped = false;
    const { fence } = fenceWith({ acknowledgeMany: async () => { stopped = true; throw timedOut(); } } as Partial<RunStore>);
    await expect(fence.acknowledge([{ leaseId: 'r1.a', kind: 'ok' }], () => stopped)).resolves.toEqual({ completed: false });
    const other = fenceWith({ acknowledgeMany: async () => { throw new Error('NOSCRIPT'); } } as Partial<RunStore>);
    await expect(other.fence.acknowledge([{ leaseId: 'r1.a', kind: 'ok' }], () => false)).rejects.toThrow('NOSCRIPT');
  });
});
