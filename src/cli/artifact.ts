import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Rendered } from '../spec/index.js';
import { UsageError } from './errors.js';
import { MSG } from './messages.js';

/** Directory names never sent as part of an artifact. */
const SKIPPED_DIRS = new Set(['node_modules', '.git']);

/** An artifact read from disk. */
export interface LoadedArtifact {
  /** A file's text, or a directory's files by relative POSIX path. */
  readonly rendered: Rendered;
  /** A single file's basename (the code runner's default entrypoint); undefined for a directory. */
  readonly entrypoint: string | undefined;
}

/**
 * Reads `--artifact`: a file becomes the rendered string; a directory becomes
 * `{ files: { "relative/path": text } }` with every file below it, skipping `node_modules`
 * and `.git`. Files are read as UTF-8 (artifacts are source text).
 * @throws UsageError when the path cannot be read or a directory holds no file.
 */
export async function loadArtifact(artifactPath: string): Promise<LoadedArtifact> {
  let info;
  try {
    info = await stat(artifactPath);
  } catch (err) {
    throw new UsageError(MSG.artifactMissing(artifactPath, (err as NodeJS.ErrnoException).code ?? (err as Error).message));
  }
  if (!info.isDirectory()) {
    return { rendered: await readFile(artifactPath, 'utf8'), entrypoint: path.basename(artifactPath) };
  }
  const files: Record<string, string> = {};
  await collectFiles(artifactPath, '', files);
  if (Object.keys(files).length === 0) throw new UsageError(MSG.artifactEmpty(artifactPath));
  return { rendered: { files }, entrypoint: undefined };
}

async function collectFiles(root: string, relative: string, into: Record<string, string>): Promise<void> {
  const entries = await readdir(path.join(root, relative), { withFileTypes: true });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) await collectFiles(root, child, into);
    } else if (entry.isFile()) {
      into[child] = await readFile(path.join(root, child), 'utf8');
    }
  }
}
