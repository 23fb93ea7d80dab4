/**
 * Loads a module by specifier and returns its namespace object, like `import()`.
 * `resolveRef` calls it only for a specifier its allowlist admitted.
 */
export type Importer = (specifier: string) => Promise<unknown>;

/**
 * The default {@link Importer}: Node's `import()`, which resolves a bare specifier from
 * this file's location, i.e. against the packages installed next to rollout-queue on the
 * worker (and `rollout-queue/...` through the package's own `exports` map).
 */
export const defaultImporter: Importer = (specifier) => import(specifier);
