import { isBuiltin } from 'node:module';

/** Longest module specifier accepted in a Ref, in characters. */
export const MAX_SPECIFIER_LENGTH = 512;

/** First character of an npm package name or scope: npm forbids a leading `.` or `_`. */
const NAME = /^[a-z0-9~-][a-z0-9._~-]*$/;
/** A subpath segment: the same characters, upper case allowed (`pkg/FooBar`). */
const SUBPATH_SEGMENT = /^[A-Za-z0-9._~-]+$/;
/** Anything that starts like a URL (`file:`, `data:`, `http:`, `node:`, `C:`). */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
/** npm's limit on a package name (scope included). */
const MAX_PACKAGE_NAME_LENGTH = 214;
/** Most specifiers whose answer is remembered; past it the memo starts over. */
const MAX_MEMO = 1024;
const memo = new Map<string, BareSpecifier | SpecifierRefusal>();

/** A well-formed bare specifier split into its package name and subpath. */
export interface BareSpecifier {
  /** `name` or `@scope/name`. */
  readonly packageName: string;
  /** The rest after the package name without the leading `/`, or `''`. */
  readonly subpath: string;
}

/** Why a module specifier is refused whatever the allowlist. */
export interface SpecifierRefusal {
  /**
   * `not-allowed` for a specifier Node could import but a Ref never may (a builtin, a
   * path, a URL); `malformed-target` for one that is not a bare specifier at all.
   */
  readonly code: 'not-allowed' | 'malformed-target';
  /** What is wrong, naming the rule. */
  readonly reason: string;
}

/**
 * Checks the rule every Ref module obeys whatever the allowlist: a **bare npm-style
 * specifier** `(@scope/)?name(/subpath)*`, resolved by the worker against its own
 * installed packages.
 *
 * - scope and name: lower case `[a-z0-9._~-]`, not starting with `.` or `_` (npm's rule for
 *   new packages; legacy upper-case names such as `JSONStream` are refused), at most 214
 *   characters together;
 * - subpath segments: `[A-Za-z0-9._~-]+`, none of them `.`;
 * - nowhere: `..`, an empty segment (`a//b`, trailing `/`), whitespace, `\`, NUL, `%`, `:`;
 * - never: `node:` specifiers or Node builtins (`fs`, `fs/promises`, `child_process`, per
 *   `module.isBuiltin`, also as the package part), relative or absolute paths (`./x`,
 *   `../x`, `/x`), URLs (`file:`, `data:`, `http:`, anything with a scheme);
 * - at most {@link MAX_SPECIFIER_LENGTH} characters.
 *
 * The answer is a pure function of the string, so it is remembered (frozen): every Ref is
 * checked on every rollout, by `validateRef` and by the allowlist.
 *
 * @returns the parts of the specifier, or a {@link SpecifierRefusal}. Never throws.
 */
export function checkBareSpecifier(specifier: string): BareSpecifier | SpecifierRefusal {
  const known = memo.get(specifier);
  if (known) return known;
  const checked = Object.freeze(check(specifier));
  if (typeof specifier === 'string') {
    if (memo.size >= MAX_MEMO) memo.clear();
    memo.set(specifier, checked);
  }
  return checked;
}

function check(specifier: string): BareSpecifier | SpecifierRefusal {
  const malformed = (reason: string): SpecifierRefusal => ({ code: 'malformed-target', reason });
  const refused = (reason: string): SpecifierRefusal => ({ code: 'not-allowed', reason });
  const shown = JSON.stringify(specifier);

  if (specifier.length === 0) return malformed('the module part is empty');
  if (specifier.length > MAX_SPECIFIER_LENGTH) return malformed(`the module specifier is longer than ${MAX_SPECIFIER_LENGTH} characters`);
  if (specifier.startsWith('node:')) {
    return refused(`module ${shown} is a Node builtin; builtins are never imported by a Ref, whatever the allowlist`);
  }
  if (SCHEME.test(specifier)) {
    return refused(`module ${shown} is a URL; a Ref names an installed package, never a URL (file:, data:, http: ...), whatever the allowlist`);
  }
  if (/^\.\.?(\/|$)/.test(specifier) || specifier.startsWith('/')) {
    return refused(`module ${shown} is a file path; a Ref names an installed package, never a relative or absolute path, whatever the allowlist`);
  }
  if (/[\s\\\0%]|[\u0000-\u001f\u007f]/.test(specifier)) {
    return malformed(`module ${shown} contains whitespace, a backslash, "%" or a control character`);
  }
  if (specifier.includes('..')) return malformed(`module ${shown} contains ".."`);

  const segments = specifier.split('/');
  if (segments.some((segment) => segment === '')) return malformed(`module ${shown} has an empty path segment ("//", or a leading or trailing "/")`);

  let packageName: string;
  let rest: string[];
  if (specifier.startsWith('@')) {
    const [scope = '', name = ''] = segments;
    if (segments.length < 2 || !NAME.test(scope.slice(1)) || !NAME.test(name)) {
      return malformed(`module ${shown} is not "@scope/name(/subpath)": scope and name are lower case letters, digits and "-._~", not starting with "." or "_"`);
    }
    packageName = `${scope}/${name}`;
    rest = segments.slice(2);
  } else {
    const [name = ''] = segments;
    if (!NAME.test(name)) {
      return malformed(`module ${shown}: package name "${name}" is not an npm name (lower case letters, digits and "-._~", not starting with "." or "_")`);
    }
    packageName = name;
    rest = segments.slice(1);
  }
  if (packageName.length > MAX_PACKAGE_NAME_LENGTH) return malformed(`module ${shown}: the package name is longer than ${MAX_PACKAGE_NAME_LENGTH} characters`);
  for (const segment of rest) {
    if (segment === '.' || !SUBPATH_SEGMENT.test(segment)) {
      return malformed(`module ${shown}: subpath segment "${segment}" may hold only letters, digits and "-._~"`);
    }
  }
  if (isBuiltin(specifier) || isBuiltin(packageName)) {
    return refused(`module ${shown} is a Node builtin; builtins are never imported by a Ref, whatever the allowlist`);
  }
  return { packageName, subpath: rest.join('/') };
}

/** True when {@link checkBareSpecifier} refused its input. */
export function isSpecifierRefusal(value: BareSpecifier | SpecifierRefusal): value is SpecifierRefusal {
  return 'code' in value;
}
