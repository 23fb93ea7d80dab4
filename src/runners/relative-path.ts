import path from 'node:path';

/**
 * Checks a path that must stay inside an artifact's work directory and returns its
 * normalized form (`./a//b` → `a/b`), or an error message saying what is wrong.
 *
 * Refused: empty paths, NUL bytes, absolute paths, `.` or a trailing `/` (a directory, not
 * a file), and any path that leaves the directory through `..` after normalization.
 */
export function normalizeRelativePath(raw: string): { readonly path: string } | { readonly problem: string } {
  if (raw.length === 0) return { problem: 'is empty; give a file path like "main.js"' };
  if (raw.includes('\0')) return { problem: 'holds a NUL byte' };
  if (path.isAbsolute(raw)) return { problem: 'is absolute; give a path relative to the artifact directory, like "src/main.js"' };
  if (raw.endsWith('/')) return { problem: 'ends with "/"; name a file, not a directory' };
  const normalized = path.normalize(raw);
  if (normalized === '.' || normalized === '..' || normalized.startsWith('../')) {
    return { problem: 'leaves the artifact directory (".."); keep every file inside it' };
  }
  return { path: normalized };
}
