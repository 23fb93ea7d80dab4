import { isPlainObject } from '../spec/index.js';

/** Longest `rendered.files` path the spec schema takes (`RenderedSchema`: a key of 1 to 512 characters). */
const MAX_PATH_CHARS = 512;

/**
 * What is wrong inside a draft's `rendered.files`, as far as the spec schema checks it (each path
 * 1 to 512 characters, each content a string), or undefined when nothing is (or `rendered` is
 * not a `{ files: { … } }` object: its shape is the caller's and stays an `InvalidSpec`).
 *
 * Why apart from the schema: in RL and evolution `rendered` is written by the model, so a bad
 * file there is the model's failure (a `model` Result, `BadRenderedFile`) that must not stop the
 * run, while the rest of the spec is the caller's (fresh-user report: one bad draft of six ended
 * `caller` and stopped the run). The message names entries by position and the rule, never a
 * path or a content (values may be secrets).
 */
export function renderedFilesIssue(rendered: unknown): string | undefined {
  const files = isPlainObject(rendered) && Object.keys(rendered).length === 1 ? rendered.files : undefined;
  if (!isPlainObject(files)) return undefined;
  const entries = Object.entries(files);
  for (let i = 0; i < entries.length; i++) {
    const [name, content] = entries[i] as [string, unknown];
    const which = `rendered.files entry #${i} (of ${entries.length})`;
    if (name.length === 0) return `${which} has an empty path; every file needs a relative path like "main.py"`;
    if (name.length > MAX_PATH_CHARS) return `${which} has a path of ${name.length} characters, over ${MAX_PATH_CHARS}`;
    if (typeof content !== 'string') return `${which} is not text (${content === null ? 'null' : Array.isArray(content) ? 'an array' : typeof content}); a file's content must be a string`;
  }
  return undefined;
}
