import { AbortError } from '../../producer/index.js';
import type { Result } from '../../spec/index.js';
import type { FinalAnswer } from './dispatch-errors.js';

/** A cell's answer: its lease's Result, and, for a kept failure, why it is final. */
export interface CellAnswer {
  readonly result: Result;
  readonly final: FinalAnswer | undefined;
}

/** One lease shared by every call attached to it. */
export class SharedCall {
  readonly controller = new AbortController();

  /** @param fingerprint the request's (`requestFingerprint`): only an equal request may join. */
  constructor(readonly fingerprint: string) {}

  private waiters = 0;
  done!: Promise<CellAnswer>;

  /** Waits for the lease's Result; the caller's own abort rejects at once, and the last one leaving cancels the lease. */
  join(signal: AbortSignal | undefined, abortError: () => AbortError): Promise<CellAnswer> {
    this.waiters++;
    return new Promise<CellAnswer>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters--;
        if (this.waiters > 0) return reject(abortError());
        this.controller.abort(signal?.reason);
        // Wait for the cancel to land, so the receipts stored so far travel with the error.
        this.done.then(() => reject(abortError()), (err: unknown) => reject(err instanceof AbortError ? err : abortError()));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.done.then(
        (answer) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(answer);
        },
        (err: unknown) => {
          if (signal?.aborted) return;
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
  }
}
