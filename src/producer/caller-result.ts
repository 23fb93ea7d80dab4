import type { Result } from '../spec/index.js';
import { producerResult } from './producer-result.js';

/**
 * The `caller` Result the producer itself produces for a draft it refused to enqueue
 * (`InvalidSpec`, `SecretInSpec`): no worker ran it, so attempts and timings are empty.
 * `message` must name fields and variables only, never values (it is stored and logged).
 */
export function callerResult(leaseId: string, runId: string, taskId: string, type: string, message: string): Result {
  return producerResult('caller', leaseId, runId, taskId, type, message);
}
