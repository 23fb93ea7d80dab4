import { RolloutSpecSchema } from '../spec/index.js';
import { closestKey } from '../spec/closest-key.js';

/** A zod issue as `RolloutSpecSchema` reports it (the fields read here). */
interface SpecIssue {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly keys?: readonly string[];
  readonly errors?: ReadonlyArray<ReadonlyArray<{ readonly code: string; readonly path: readonly PropertyKey[]; readonly expected?: unknown }>>;
}

/** A zod schema node as far as key lookup needs it: an object's `shape`, a wrapper's inner type. */
interface SchemaNode {
  readonly shape?: Record<string, SchemaNode>;
  readonly _zod?: { readonly def?: { readonly innerType?: SchemaNode } };
}

/** The keys the spec schema allows in the object at `path` (through optional and default wrappers), or none. */
function keysAt(path: readonly PropertyKey[]): string[] {
  const unwrap = (node: SchemaNode | undefined): SchemaNode | undefined => {
    let current = node;
    while (current && !current.shape && current._zod?.def?.innerType) current = current._zod.def.innerType;
    return current;
  };
  let node = unwrap(RolloutSpecSchema as unknown as SchemaNode);
  for (const step of path) node = unwrap(typeof step === 'string' ? node?.shape?.[step] : undefined);
  return node?.shape ? Object.keys(node.shape) : [];
}

/**
 * A spec issue in words that say what to write: an unknown key with the allowed key it most
 * likely misspells (`timeout` → "did you mean "timeouts"?"), a value none of a union's forms
 * takes with the types those forms expect; anything else as zod says it (fresh-user report:
 * "Unrecognized key: "timeout"" and a bare "Invalid input" for `rendered: 3`).
 */
export function specIssueText(issue: SpecIssue): string {
  if (issue.code === 'unrecognized_keys' && issue.keys) {
    const known = keysAt(issue.path);
    return issue.keys
      .map((key) => {
        const near = closestKey(key, known);
        return `unknown key "${key}"${near ? ` (did you mean "${near}"?)` : ''}`;
      })
      .join(', ');
  }
  if (issue.code === 'invalid_union' && issue.errors) {
    const expected = [...new Set(issue.errors.flatMap((branch) => branch.filter((inner) => inner.path.length === 0 && inner.code === 'invalid_type').map((inner) => String(inner.expected))))];
    if (expected.length > 0) return `${issue.message}: expected ${expected.join(' or ')}`;
  }
  return issue.message;
}
