import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Rendered } from '../spec/index.js';
import { UsageError } from './errors.js';
import { fileErrorText } from './file-error.js';
import { MSG } from './messages.js';

/** Directory names never sent as part of an artifact. */
export const SKIPPED_ARTIFACT_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git']);

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
 * and `.git`. Files must be UTF-8 text (artifacts are source text); a binary file or a symbolic
 * link inside a directory is refused rather than corrupted or silently dropped.
 * @throws UsageError when the path cannot be read, a file is not UTF-8, a directory holds a
 *   symbolic link or no file.
 */
export async function loadArtifact(artifactPath: string): Promise<LoadedArtifact> {
  let info;
  try {
    info = await stat(artifactPath);
  } catch (err) {
    throw new UsageError(MSG.artifactMissing(artifactPath, fileErrorText(err)));
  }
  if (!info.isDirectory()) {
    return { rendered: await readText(artifactPath), entrypoint: path.basename(artifactPath) };
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
      if (!SKIPPED_ARTIFACT_DIRS.has(entry.name)) await collectFiles(root, child, into);
    } else if (entry.isSymbolicLink()) {
      throw new UsageError(MSG.artifactSymlink(path.join(root, child)));
    } else if (entry.isFile()) {
      into[child] = await readText(path.join(root, child));
    } else if (!(await lstat(path.join(root, child))).isFile()) {
      throw new UsageError(MSG.artifactMissing(path.join(root, child), 'not a regular file'));
    }
  }
}

/** A file's text; refuses bytes that are not valid UTF-8 instead of replacing them. */
async function readText(file: string): Promise<string> {
  const bytes = await readFile(file);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(MSG.artifactBinary(file));
  }
}
