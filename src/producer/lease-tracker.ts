import type { Result } from '../spec/index.js';

/**
 * Where an unfinished lease of a live session stands: `adding` while its `Queue.add` is in
 * flight (an event may already finish it, reconciliation must not read it yet), `outstanding`
 * once the job is known to exist.
 */
export type UnfinishedState = 'adding' | 'outstanding';

/**
 * In-memory state of one session: unfinished leases, Results ready to yield, and a pulse that
 * wakes whoever waits for a change (the consumer for a Result, the enqueuer for capacity).
 * Everything durable lives in Redis; this can be rebuilt from it at any time.
 */
export class LeaseTracker {
  private readonly unfinished = new Map<string, UnfinishedState>();
  private readonly ready: Result[] = [];
  private pulse: { promise: Promise<void>; resolve: () => void } = LeaseTracker.newPulse();
  /** A Result was turned away because `maxHeld` were ready; cleared once room is made. */
  private turnedAway = false;

  /**
   * @param maxHeld most Results held for the consumer (`ProducerOptions.maxHeldResults`).
   * @param onRoom called when the consumer took half of `maxHeld` after a Result was turned away.
   */
  constructor(
    private readonly maxHeld = Number.POSITIVE_INFINITY,
    private readonly onRoom: () => void = () => undefined,
  ) {}

  private static newPulse(): { promise: Promise<void>; resolve: () => void } {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  }

  /** Leases enqueued and not yet seen finished: what back-pressure counts. */
  get unfinishedCount(): number {
    return this.unfinished.size;
  }

  /** Results waiting for the consumer. */
  get readyCount(): number {
    return this.ready.length;
  }

  /** Starts tracking a lease (`adding` before `Queue.add`, `outstanding` for one loaded on resume). */
  track(leaseId: string, state: UnfinishedState): void {
    if (!this.unfinished.has(leaseId)) this.unfinished.set(leaseId, state);
  }

  /** `adding` → `outstanding` once the add returned; a lease finished meanwhile stays finished. */
  confirm(leaseId: string): void {
    if (this.unfinished.get(leaseId) === 'adding') this.unfinished.set(leaseId, 'outstanding');
  }

  /** Stops tracking a lease that will never answer (its add failed, its job was removed by a stop). */
  forget(leaseId: string): void {
    if (this.unfinished.delete(leaseId)) this.notify();
  }

  /** True while the lease's Result is still awaited (events for other leases are ignored). */
  awaits(leaseId: string): boolean {
    return this.unfinished.has(leaseId);
  }

  /** Lease ids whose job exists and has not been seen finished: what reconciliation reads. */
  outstanding(): string[] {
    const ids: string[] = [];
    for (const [leaseId, state] of this.unfinished) if (state === 'outstanding') ids.push(leaseId);
    return ids;
  }

  /**
   * Accepts the Result of an awaited lease and queues it for the consumer. Returns false (and
   * drops it) when the lease is not awaited: the event and the reconciliation both saw it finish;
   * or when `maxHeld` Results are ready already: then the lease stays unfinished (its Result
   * is durable in Redis and read again by reconciliation once there is room).
   */
  finish(result: Result): boolean {
    if (!this.unfinished.has(result.leaseId)) return false;
    if (this.ready.length >= this.maxHeld) {
      this.turnedAway = true;
      return false;
    }
    this.unfinished.delete(result.leaseId);
    this.ready.push(result);
    this.notify();
    return true;
  }

  /** Queues a Result that no job produced (a draft the producer refused). */
  pushReady(result: Result): void {
    this.ready.push(result);
    this.notify();
  }

  /** Every lease this session still cares about: unfinished or with a Result not yet yielded. */
  pendingLeases(): string[] {
    return [...this.unfinished.keys(), ...this.ready.map((result) => result.leaseId)];
  }

  /**
   * Forgets leases another coordinator delivered while this one had lost its lease: their
   * Results must not be yielded again (nor awaited). Returns how many were dropped.
   */
  dropDelivered(delivered: ReadonlySet<string>): number {
    let dropped = 0;
    for (const leaseId of delivered) if (this.unfinished.delete(leaseId)) dropped++;
    for (let i = this.ready.length - 1; i >= 0; i--) {
      if (delivered.has((this.ready[i] as Result).leaseId)) {
        this.ready.splice(i, 1);
        dropped++;
      }
    }
    if (dropped > 0) this.notify();
    return dropped;
  }

  /** The next Result for the consumer, in completion order. */
  takeReady(): Result | undefined {
    const result = this.ready.shift();
    if (this.turnedAway && this.ready.length <= this.maxHeld / 2) {
      this.turnedAway = false;
      this.onRoom();
    }
    return result;
  }

  /** Resolves at the next change (a Result, capacity, a stop); callers re-check their condition. */
  changed(): Promise<void> {
    return this.pulse.promise;
  }

  /** Wakes every waiter. */
  notify(): void {
    const { resolve } = this.pulse;
    this.pulse = LeaseTracker.newPulse();
    resolve();
  }
}
