import { describe, expect, it } from 'vitest';
import { resultForMissingJob } from '../../../src/producer/result-from-job.js';

describe('resultForMissingJob', () => {
  // Fresh-user report: after Redis restarted empty mid-run, 52 leases ended JobMissing with a
  // message naming only removals by hand; nothing pointed at the Redis that kept no data.
  it('is infrastructure/JobMissing naming the lease, the queue and a Redis that restarted without persistence', () => {
    const result = resultForMissingJob('rr.t7', 'rr', 'rollouts');
    expect(result).toMatchObject({ leaseId: 'rr.t7', runId: 'rr', taskId: 't7', kind: 'infrastructure', error: { type: 'JobMissing' } });
    expect(result.error?.message).toContain('the job of lease rr.t7 is gone from queue "rollouts"');
    expect(result.error?.message).toContain('lost by a Redis that restarted without persistence: keep appendonly yes');
  });
});
