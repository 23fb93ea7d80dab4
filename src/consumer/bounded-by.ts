/**
 * Waits for `work`, but never longer than `ms` (a client that never settles must not hold a
 * shutdown). Never rejects when `work` does not; the timer is cleared either way.
 */
export async function boundedBy(ms: number, work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
