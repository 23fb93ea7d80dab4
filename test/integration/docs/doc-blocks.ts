import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The fenced code blocks of the user-facing Markdown (README, docs/, the examples' READMEs), read
 * the way CommonMark reads them, so test/integration/docs/doc-blocks.test.ts can check each one
 * by its language. A block's info string is `<language> [no-run: <reason>]`; a block without a
 * language is plain text (usage synopses, diagrams, output) and is not code.
 */
export interface DocBlock {
  /** Path relative to the repository root, e.g. `docs/cli.md`. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The info string's first word (`ts`, `bash`…), `''` without one. */
  readonly language: string;
  /** The reason after `no-run:` in the info string, when the block is marked as one a test cannot run. */
  readonly noRun: string | undefined;
  /** The block's text, without the fences, ending in a newline. */
  readonly body: string;
  /** The `<!-- doc-example: NAME (run by PATH) -->` (or `readme-example`) comment right above the fence, if any. */
  readonly example: { readonly name: string; readonly runBy: string | undefined } | undefined;
}

/** `file:line (language)`, how a failing block is named in a message. */
export function where(block: DocBlock): string {
  return `${block.file}:${block.line} (\`\`\`${block.language || 'text'})`;
}

/** Every fenced block of the Markdown file `file` (relative to `root`). */
export function readDocBlocks(root: string, file: string): DocBlock[] {
  return docBlocksOf(file, readFileSync(path.join(root, file), 'utf8'));
}

/** Every fenced block of `markdown`, named as coming from `file`. */
export function docBlocksOf(file: string, markdown: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  for (let at = 0; at < lines.length; at += 1) {
    const open = /^( {0,3})(`{3,}|~{3,})(.*)$/.exec(lines[at] ?? '');
    if (!open) continue;
    const fence = open[2] ?? '```';
    const info = (open[3] ?? '').trim();
    const body: string[] = [];
    let end = at + 1;
    while (end < lines.length && !new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).test(lines[end] ?? '')) body.push(lines[end++] ?? '');
    const language = info.split(/\s+/)[0] ?? '';
    const noRun = /\bno-run:\s*(.*)$/.exec(info)?.[1]?.trim();
    const above = previousNonBlank(lines, at);
    const marker = /^<!--\s*(?:doc|readme)-example:\s*([\w-]+)(?:\s*\(([^)]*)\))?\s*-->$/.exec(above ?? '');
    const runBy = marker?.[2] ? /\b((?:test|bench)\/[\w./-]+)/.exec(marker[2])?.[1] : undefined;
    blocks.push({
      file,
      line: at + 1,
      language: info.includes('no-run') && language.startsWith('no-run') ? '' : language,
      noRun: info.includes('no-run') ? (noRun ?? '') : undefined,
      body: body.length > 0 ? `${body.join('\n')}\n` : '',
      example: marker ? { name: marker[1] ?? '', runBy } : undefined,
    });
    at = end;
  }
  return blocks;
}

function previousNonBlank(lines: readonly string[], at: number): string | undefined {
  for (let i = at - 1; i >= 0; i -= 1) if ((lines[i] ?? '').trim() !== '') return (lines[i] ?? '').trim();
  return undefined;
}

/** One simple command of a shell block: its words after quote removal, with the leading `NAME=value` assignments apart. */
export interface ShellCommand {
  readonly words: readonly string[];
  readonly assignments: readonly string[];
  /** The source text it came from (after joining continued lines), for messages. */
  readonly source: string;
}

/**
 * Splits a bash/sh block into simple commands, far enough to check the ones that name our CLI:
 * heredoc bodies are skipped, `\`-continued lines joined, comments dropped, quotes removed, and
 * commands split at `&&`, `||`, `|`, `;` and `&`. Redirections take their target word with them.
 * `$(…)` stays one word. Not a shell: enough for documentation written to be pasted.
 */
export function shellCommands(script: string): ShellCommand[] {
  const lines: string[] = [];
  const raw = script.split('\n');
  for (let i = 0; i < raw.length; i += 1) {
    const line = raw[i] ?? '';
    lines.push(line);
    const heredoc = /<<-?\s*(['"]?)([A-Za-z_]\w*)\1/.exec(line);
    if (heredoc) {
      while (i + 1 < raw.length && (raw[i + 1] ?? '').trim() !== heredoc[2]) i += 1;
      i += 1; // the terminator
    }
  }
  const joined = lines.join('\n').replace(/\\\n/g, ' ');
  const commands: ShellCommand[] = [];
  for (const line of joined.split('\n')) commands.push(...commandsOfLine(line));
  return commands;
}

function commandsOfLine(line: string): ShellCommand[] {
  const out: ShellCommand[] = [];
  let words: string[] = [];
  let word: string | undefined;
  let start = 0;
  let redirect = false;
  const endWord = () => {
    if (word === undefined) return;
    if (redirect) redirect = false;
    else words.push(word);
    word = undefined;
  };
  const endCommand = (at: number) => {
    endWord();
    if (words.length > 0) {
      const firstWord = words.findIndex((w) => !/^[A-Za-z_]\w*=/.test(w));
      const assignments = firstWord === -1 ? words : words.slice(0, firstWord);
      out.push({ words: firstWord === -1 ? [] : words.slice(firstWord), assignments, source: line.slice(start, at).trim() });
    }
    words = [];
    start = at + 1;
  };
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i] ?? '';
    if (c === "'") {
      const close = line.indexOf("'", i + 1);
      word = (word ?? '') + line.slice(i + 1, close === -1 ? line.length : close);
      i = close === -1 ? line.length : close;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      while (j < line.length && line[j] !== '"') {
        if (line[j] === '\\' && j + 1 < line.length) j += 1;
        text += line[j];
        j += 1;
      }
      word = (word ?? '') + text;
      i = j;
    } else if (c === '\\' && i + 1 < line.length) {
      word = (word ?? '') + line[i + 1];
      i += 1;
    } else if (c === '$' && line[i + 1] === '(') {
      let depth = 0;
      let j = i + 1;
      for (; j < line.length; j += 1) {
        if (line[j] === '(') depth += 1;
        if (line[j] === ')' && --depth === 0) break;
      }
      word = (word ?? '') + line.slice(i, j + 1);
      i = j;
    } else if (c === '#' && word === undefined) {
      endCommand(i);
      return out;
    } else if (c === ' ' || c === '\t') {
      endWord();
    } else if (c === '&' || c === '|' || c === ';') {
      if ((c === '&' || c === '|') && line[i + 1] === c) i += 1;
      endCommand(i);
    } else if (c === '>' || c === '<') {
      endWord();
      while (line[i + 1] === '>' || line[i + 1] === '<' || line[i + 1] === '&') i += 1;
      redirect = true;
    } else {
      word = (word ?? '') + c;
    }
  }
  endCommand(line.length);
  return out;
}

/**
 * The arguments a shell command gives the `rollout-queue` CLI, or undefined when it runs
 * something else: `rollout-queue …`, `npx rollout-queue …`, `node bin/rollout-queue.js …`
 * (any path ending in `bin/rollout-queue.js`).
 */
export function cliArguments(command: ShellCommand): string[] | undefined {
  const [first, second, ...rest] = command.words;
  if (first === 'rollout-queue') return command.words.slice(1);
  if (first === 'npx' && second === 'rollout-queue') return rest;
  if (first === 'node' && second !== undefined && /(^|\/)bin\/rollout-queue\.js$/.test(second)) return rest;
  return undefined;
}

/**
 * The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_` dropped,
 * each space a `-` (github-slugger's rule, without its numbering of repeats).
 */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of every heading of `markdown` (outside fenced blocks), repeats numbered `-1`, `-2` as GitHub does. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^ {0,3}(`{3,}|~{3,})/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = headingAnchor(heading[1] ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}
