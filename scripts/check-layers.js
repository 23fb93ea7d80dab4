#!/usr/bin/env node
// Checks that imports between the layers of src/ flow one way (DESIGN.md "Layout"):
//   spec ← ref, lease, platform ← producer, consumer ← cli;  runners, rewards → spec only
//   (runners also → sandbox, the per-attempt containment, which imports nothing of ours);
//   dashboard → spec, lease, platform;  producer ↛ consumer and back;
//   dispatch (the built-in worker side of the harness seam) → spec only;
//   gateway (HTTP edge, a top layer like cli) → producer and below, never consumer.
// A layer is the first folder under src/; files directly in src/ (the package entry) may import
// any layer but cli. Static imports, re-exports, `import type`, side-effect imports and
// `import('literal')` all count, also through the package's own name (`rollout-queue/spec`).
//
// Usage: node scripts/check-layers.js [SRC_DIR]   (default: src next to this script)
// Prints one line per violation, `file: imports X (layer A may not import B) at line N`, exits 1.
// No dependencies: comments are stripped by a small scanner, so an import inside a doc
// comment does not count.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Which layers each layer may import (its own always allowed). `*` = any. */
const ALLOWED = {
  spec: [],
  ref: ['spec'],
  lease: ['spec'],
  platform: ['spec'],
  sandbox: [],
  runners: ['spec', 'sandbox'],
  rewards: ['spec'],
  dispatch: ['spec'],
  producer: ['spec', 'ref', 'lease', 'platform', 'dispatch'],
  consumer: ['spec', 'ref', 'lease', 'platform', 'sandbox'],
  dashboard: ['spec', 'lease', 'platform'],
  gateway: ['spec', 'ref', 'lease', 'platform', 'dispatch', 'producer'],
  cli: ['*'],
  '(root)': ['spec', 'ref', 'lease', 'platform', 'sandbox', 'runners', 'rewards', 'dispatch', 'producer', 'consumer', 'dashboard', 'gateway'],
};

/** Public subpaths of the package (`exports` map) and the layer each one is. */
const PACKAGE_NAME = 'rollout-queue';
const SELF_SUBPATHS = { '': '(root)', spec: 'spec', runners: 'runners', rewards: 'rewards', dispatch: 'dispatch' };

const here = path.dirname(fileURLToPath(import.meta.url));
const srcDir = path.resolve(process.argv[2] ?? path.join(here, '..', 'src'));

/** Every .ts file below `dir` (not .d.ts). */
function tsFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(full));
    else if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** Characters after which a `/` starts a regular expression literal rather than a division. */
const REGEX_AFTER = new Set(['', '(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';', '+', '-', '*', '%', '<', '>', '~', '^']);

/** Index just past the regular expression literal starting at `start` (a `/`). */
function skipRegex(source, start) {
  let i = start + 1;
  let inClass = false;
  while (i < source.length && source[i] !== '\n') {
    const c = source[i];
    if (c === '\\') i += 2;
    else {
      if (c === '[') inClass = true;
      else if (c === ']') inClass = false;
      else if (c === '/' && !inClass) return i + 1;
      i += 1;
    }
  }
  return i;
}

/**
 * The source with comments replaced by spaces; strings, template literals and regular
 * expression literals kept as they are (strings hold the specifiers; skipping regexes keeps a
 * quote inside one from swallowing the code after it).
 */
function stripComments(source) {
  let out = '';
  let i = 0;
  let last = '';
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i += 1;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end < 0 ? source.length : end + 2;
      out += source.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (c === '/' && (REGEX_AFTER.has(last) || /\b(return|typeof|case|in|of)$/.test(out.trimEnd()))) {
      const stop = skipRegex(source, i);
      out += source.slice(i, stop);
      i = stop;
      last = '/';
    } else if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === '\\' ? 2 : 1;
      out += source.slice(i, j + 1);
      i = j + 1;
      last = c;
    } else {
      out += c;
      if (!/\s/.test(c)) last = c;
      i += 1;
    }
  }
  return out;
}

const IMPORT_PATTERNS = [
  /\b(?:import|export)\s+(?:type\s+)?[\w*\s{},$]*?\bfrom\s*(['"])([^'"]+)\1/g,
  /\bimport\s*(['"])([^'"]+)\1/g,
  /\bimport\s*\(\s*(['"])([^'"]+)\1\s*\)/g,
];

/** Module specifiers imported by `source`, with their line numbers. */
function importsOf(source) {
  const code = stripComments(source);
  const found = [];
  for (const pattern of IMPORT_PATTERNS) {
    for (const match of code.matchAll(pattern)) {
      found.push({ specifier: match[2], line: code.slice(0, match.index).split('\n').length });
    }
  }
  return found;
}

/** The layer of a file path inside src/. */
function layerOfFile(file) {
  const relative = path.relative(srcDir, file).split(path.sep);
  return relative.length === 1 ? '(root)' : relative[0];
}

/** The layer a specifier points at, or undefined for a third-party module. */
function layerOfSpecifier(specifier, fromFile) {
  if (specifier.startsWith('.')) {
    const target = path.resolve(path.dirname(fromFile), specifier);
    const relative = path.relative(srcDir, target);
    if (relative.startsWith('..') || path.isAbsolute(relative)) return '(outside src)';
    const parts = relative.split(path.sep);
    return parts.length === 1 ? '(root)' : parts[0];
  }
  if (specifier === PACKAGE_NAME || specifier.startsWith(`${PACKAGE_NAME}/`)) {
    const subpath = specifier.slice(PACKAGE_NAME.length + 1).split('/')[0] ?? '';
    return SELF_SUBPATHS[subpath] ?? `(${specifier})`;
  }
  return undefined;
}

function main() {
  try {
    if (!statSync(srcDir).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    console.error(`check-layers: cannot read ${srcDir}: ${err.message}`);
    process.exit(2);
  }
  const files = tsFiles(srcDir).sort();
  const violations = [];
  for (const file of files) {
    const shown = path.relative(process.cwd(), file);
    const layer = layerOfFile(file);
    const allowed = ALLOWED[layer];
    if (!allowed) {
      violations.push(`${shown}: is in folder src/${layer}, which is no known layer (add it to ALLOWED in scripts/check-layers.js)`);
      continue;
    }
    for (const { specifier, line } of importsOf(readFileSync(file, 'utf8'))) {
      const target = layerOfSpecifier(specifier, file);
      if (target === undefined || target === layer || allowed.includes('*') || allowed.includes(target)) continue;
      violations.push(`${shown}: imports ${specifier} (layer ${layer} may not import ${target}) at line ${line}`);
    }
  }
  for (const violation of violations) console.error(violation);
  if (violations.length > 0) {
    console.error(`check-layers: ${violations.length} violation(s) in ${files.length} files; imports must flow spec ← ref, lease, platform ← producer, consumer ← cli (DESIGN.md "Layout")`);
    process.exit(1);
  }
  console.log(`check-layers: ${files.length} files, imports flow one way`);
}

main();
