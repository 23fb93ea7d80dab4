import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { watchNoWorker } from '../../../src/cli/no-worker-watch.js';
import { useProducerFixture } from '../../helpers/producer-fixture.js';
import { waitFor } from '../../helpers/wait-for.js';

// `run` warns while no worker serves the queue, and stops once one does.
const fx = useProducerFixture();

describe('watchNoWorker', () => {
  it('repeats the warning while no worker is connected and goes quiet once one is', async () => {
    const queue = fx.queueName();
    const rq = await fx.open(queue);
    const stderr = new PassThrough();
    let text = '';
    stderr.on('data', (chunk: Buffer) => void (text += chunk.toString()));
    const stop = watchNoWorker(rq, queue, 'rqt', stderr, 100, " --allow 'my-rewards/*'");
    try {
      await waitFor(() => (text.match(/still no worker serving queue/g) ?? []).length >= 2, 'two warnings');
      // With the --allow flags the run's own Refs need (a worker started without them refused the run).
      expect(text).toContain(`rollout-queue worker --queue ${queue} --allow 'my-rewards/*'\n`);
      await fx.worker(queue);
      await waitFor(async () => (await rq.status()).workers.length > 0, 'the worker to be listed');
      const count = (): number => (text.match(/still no worker serving queue/g) ?? []).length;
      const settled = count();
      // Absence has no event to wait on: let a few looks (every 100 ms) pass. One look already
      // in flight when the worker appeared may still warn once.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(count()).toBeLessThanOrEqual(settled + 1);
    } finally {
      stop();
    }
  });
});
