/**
 * Where queues were used, for a queue nothing used (`queuesUsedInstead`): `queues`, the queues
 * used under its prefix; when there are none, `elsewhere`, each prefix of this Redis with used
 * queues and those queues (a misspelt `ROLLOUT_QUEUE_PREFIX`), else empty.
 */
export interface QueuesUsed {
  readonly queues: readonly string[];
  readonly elsewhere: ReadonlyMap<string, readonly string[]>;
}
