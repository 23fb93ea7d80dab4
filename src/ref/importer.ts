import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Loads a module by specifier and returns its namespace object, like `import()`.
 * `resolveRef` calls it only for a specifier its allowlist admitted.
 */
export type Importer = (specifier: string) => Promise<unknown>;

const HERE = fileURLToPath(import.meta.url);

/**
 * True when `error` is Node's "Cannot find package" for the package `specifier` names, imported
 * from this file: the package is not installed where rollout-queue is. An error from inside the
 * package (one of its own imports missing) is not, and is reported as it is.
 */
function packageMissingHere(error: unknown, specifier: string): boolean {
  if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') return false;
  const packageName = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] ?? specifier);
  const message = (error as Error).message;
  return message.includes(`Cannot find package '${packageName}'`) && message.includes(HERE);
}

/**
 * The default {@link Importer}. Node's `import()` resolves a bare specifier from this file's
 * real path: against the packages installed next to rollout-queue on the worker (and
 * `rollout-queue/...` through the package's own `exports` map). A package not found there is
 * resolved from the worker's working directory as Node resolves an `import` there
 * (`import-meta-resolve`): with rollout-queue installed as a symlink (`npm install <dir>`, `npm
 * link`, a workspace) its real path lies outside the project, and the project's own packages
 * were never found (fresh-user report).
 * @throws the first `import()` error when the working directory does not resolve it either.
 */
export const defaultImporter: Importer = async (specifier) => {
  try {
    return await import(specifier);
  } catch (error) {
    if (!packageMissingHere(error, specifier)) throw error;
    let url: string;
    try {
      // Loaded only here: the rollout child, which imports this module, starts with no package.
      const { resolve } = await import('import-meta-resolve');
      url = resolve(specifier, pathToFileURL(path.join(process.cwd(), path.sep)).href);
    } catch {
      throw error;
    }
    return import(url);
  }
};
