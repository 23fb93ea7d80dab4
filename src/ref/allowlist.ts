import { AllowlistError } from './allowlist-error.js';
import { checkBareSpecifier, isSpecifierRefusal } from './bare-specifier.js';

/**
 * The default allowlist: this package's own built-ins (`rollout-queue` and its subpaths,
 * which its `exports` map limits to the public ones, e.g. `rollout-queue/rewards`).
 */
export const DEFAULT_ALLOWLIST: readonly string[] = Object.freeze(['rollout-queue', 'rollout-queue/*']);

/** The answer of {@link Allowlist.check}. */
export type AllowDecision =
  | {
      readonly allowed: true;
      /** The pattern that admitted the module. */
      readonly pattern: string;
      readonly reason: string;
    }
  | {
      readonly allowed: false;
      /** `malformed-target`: not a bare specifier; `not-allowed`: refused by rule or by the allowlist. */
      readonly code: 'not-allowed' | 'malformed-target';
      readonly reason: string;
    };

type Matcher =
  | { readonly kind: 'exact'; readonly pattern: string; readonly specifier: string }
  | { readonly kind: 'prefix'; readonly pattern: string; readonly base: string };

/** Most decisions an {@link Allowlist} remembers; past it it starts over. */
const MAX_DECISIONS = 1024;

const SCOPE_WILDCARD = /^@[a-z0-9~-][a-z0-9._~-]*\/\*$/;

function compilePattern(pattern: unknown): Matcher {
  const fix =
    'Patterns are an exact bare specifier ("pkg", "@scope/pkg/sub"), "pkg/*" (the package and any subpath) or "@scope/*" (any package of the scope)';
  if (typeof pattern !== 'string') {
    throw new AllowlistError(pattern, `allowlist pattern must be a string, got ${pattern === null ? 'null' : typeof pattern}. ${fix}.`);
  }
  const shown = JSON.stringify(pattern);
  if (SCOPE_WILDCARD.test(pattern)) return { kind: 'prefix', pattern, base: pattern.slice(0, -2) };
  const wildcard = pattern.endsWith('/*');
  const base = wildcard ? pattern.slice(0, -2) : pattern;
  if (base.includes('*')) {
    throw new AllowlistError(pattern, `allowlist pattern ${shown} is refused: "*" may only end a pattern as "/*" after a package or scope, never stand alone or inside a name. ${fix}.`);
  }
  const checked = checkBareSpecifier(base);
  if (isSpecifierRefusal(checked)) {
    throw new AllowlistError(pattern, `allowlist pattern ${shown} is refused: ${checked.reason}. ${fix}.`);
  }
  return wildcard ? { kind: 'prefix', pattern, base } : { kind: 'exact', pattern, specifier: base };
}

function matches(matcher: Matcher, specifier: string): boolean {
  if (matcher.kind === 'exact') return specifier === matcher.specifier;
  // Per path segment: "pkg/*" admits "pkg" and "pkg/x", never "pkg-evil"; "@s/*" admits "@s/x".
  // A bare "@scope" is never a valid specifier, so "@scope/*" only ever matches below it.
  return specifier === matcher.base || specifier.startsWith(`${matcher.base}/`);
}

/**
 * Which modules a worker's Refs may import: compiled, immutable patterns of bare module
 * specifiers. Whoever can write to the queue can run any allowed code, so widening it is
 * an explicit worker option, and {@link Allowlist.widened} tells the start log.
 *
 * Pattern forms (matched per path segment, so `rollout-queue-evil` never matches
 * `rollout-queue/*`):
 * - exact `pkg` or `@scope/pkg/sub`: that specifier only;
 * - `pkg/*`, `@scope/pkg/*`, `pkg/sub/*`: the base itself and any subpath below it;
 * - `@scope/*`: any package of the scope and its subpaths.
 *
 * Whatever the patterns, {@link checkBareSpecifier}'s rules come first: builtins, `node:`,
 * paths, URLs and malformed specifiers are always refused.
 */
export class Allowlist {
  /** The patterns, deduplicated, in the order given. */
  readonly patterns: readonly string[];
  /** True when some pattern is not in {@link DEFAULT_ALLOWLIST} (log it at worker start). */
  readonly widened: boolean;
  /** Stable identity of the pattern set (sorted, newline-joined), e.g. for cache keys. */
  readonly key: string;
  readonly #matchers: readonly Matcher[];
  /** Decisions by specifier: a pure function of the (immutable) patterns, asked on every rollout. */
  readonly #decisions = new Map<string, AllowDecision>();

  private constructor(matchers: readonly Matcher[]) {
    this.#matchers = matchers;
    this.patterns = Object.freeze(matchers.map((matcher) => matcher.pattern));
    this.widened = this.patterns.some((pattern) => !DEFAULT_ALLOWLIST.includes(pattern));
    this.key = [...this.patterns].sort().join('\n');
    Object.freeze(this);
  }

  /**
   * Compiles `patterns` (default {@link DEFAULT_ALLOWLIST}); they replace the default, so
   * to widen it pass `[...DEFAULT_ALLOWLIST, '@acme/rollouts/*']`. An empty list refuses
   * every module.
   *
   * @throws AllowlistError for a malformed pattern (`*`, `node:*`, `./x`, `fs`, `pkg*`, a
   *   URL, a non-string), naming it and the forms allowed.
   */
  static compile(patterns: readonly string[] = DEFAULT_ALLOWLIST): Allowlist {
    if (!Array.isArray(patterns)) {
      throw new AllowlistError(patterns, `allowlist must be an array of pattern strings, got ${typeof patterns}`);
    }
    const seen = new Set<string>();
    const matchers: Matcher[] = [];
    for (const pattern of patterns as readonly unknown[]) {
      const matcher = compilePattern(pattern);
      if (seen.has(matcher.pattern)) continue;
      seen.add(matcher.pattern);
      matchers.push(matcher);
    }
    return new Allowlist(matchers);
  }

  /**
   * Decides whether a Ref may import `specifier`. Never throws, never imports anything.
   *
   * @returns `{ allowed: true, pattern }` naming the admitting pattern, or
   *   `{ allowed: false, code, reason }` with a reason that names the rule or the patterns.
   */
  check(specifier: string): AllowDecision {
    const known = this.#decisions.get(specifier);
    if (known) return known;
    const decision = Object.freeze(this.#decide(specifier));
    if (typeof specifier === 'string') {
      if (this.#decisions.size >= MAX_DECISIONS) this.#decisions.clear();
      this.#decisions.set(specifier, decision);
    }
    return decision;
  }

  #decide(specifier: string): AllowDecision {
    const checked = checkBareSpecifier(specifier);
    if (isSpecifierRefusal(checked)) return { allowed: false, code: checked.code, reason: checked.reason };
    const matcher = this.#matchers.find((candidate) => matches(candidate, specifier));
    if (matcher) return { allowed: true, pattern: matcher.pattern, reason: `module "${specifier}" is admitted by allowlist pattern "${matcher.pattern}"` };
    const listed = this.patterns.length === 0 ? 'it is empty' : `patterns: ${this.patterns.map((p) => JSON.stringify(p)).join(', ')}`;
    return { allowed: false, code: 'not-allowed', reason: `module "${specifier}" is not in the worker's allowlist (${listed})` };
  }
}
