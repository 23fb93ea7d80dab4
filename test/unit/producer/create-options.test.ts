import { describe, expect, it } from 'vitest';
import { compileWorkerOptions } from '../../../src/consumer/worker-options.js';
import { compileProducerOptions } from '../../../src/producer/producer-options.js';

// Fresh-user report (helper-30): `RolloutQueue.create({ redis: … })` said "RolloutQueue option
// (options): Unrecognized key: "redis"; see ProducerOptions", and `RolloutWorker.create({
// concurency: 2 })` "worker option (options): Unrecognized key", naming neither the right key nor the choices.
describe('an unknown option of create()', () => {
  it('RolloutQueue.create lists its options', () => {
    let message = '';
    try {
      compileProducerOptions({ redis: 'redis://127.0.0.1:17721' } as never, {});
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^RolloutQueue\.create: unknown option "redis"; its options are redisUrl, queue, prefix, maxInFlight, /);
  });

  it('RolloutWorker.create offers the option it most likely misspells, and lists them', () => {
    expect(() => compileWorkerOptions({ concurency: 2 } as never)).toThrow(/^RolloutWorker\.create: unknown option "concurency" \(did you mean "concurrency"\?\); its options are .*\bconcurrency\b.*\blogger$/);
  });
});
