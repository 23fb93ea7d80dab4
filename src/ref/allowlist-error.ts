/**
 * A malformed allowlist pattern, thrown by `Allowlist.compile` when a worker is configured
 * (not per rollout). Widening the allowlist must be explicit and sane: `*`, `node:*`,
 * paths, URLs and builtins are never patterns.
 */
export class AllowlistError extends Error {
  /** The pattern as given. */
  readonly pattern: unknown;
  constructor(pattern: unknown, message: string) {
    super(message);
    this.name = new.target.name;
    this.pattern = pattern;
  }
}
