/** Words for the file errors a user meets, with the code after them. */
const WORDS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'it is a directory, not a file',
  ENOTDIR: 'a part of the path is not a directory',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
};

/**
 * Why a file operation failed, for a message: `no such file or directory (ENOENT)` for a known
 * errno code (fresh-user report: `cannot read --tasks x.jsonl: ENOENT`), the code alone for
 * another one, else the error's message.
 */
export function fileErrorText(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string') return WORDS[code] ? `${WORDS[code]} (${code})` : code;
  return err instanceof Error ? err.message : String(err);
}
