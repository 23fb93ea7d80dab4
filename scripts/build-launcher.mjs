#!/usr/bin/env node
// Builds native/rq-launch from native/*.c (rq-launch.c: the per-attempt launcher and main;
// launch-server.c and attempt.c: the launch server; rq-launch.h): the program that starts each rollout
// attempt inside its containment in one exec (src/sandbox/native-launcher.ts). Run by
// `npm run build` and by npm's `install` step. Without a C compiler it prints one line and
// exits 0: workers then start attempts through the util-linux chain (setpriv, unshare, a
// /bin/sh init), the same containment at a few ms more CPU per attempt.
// Static where the C library allows it (no dynamic linking per attempt: ~2 ms of CPU on a
// small VM), else dynamic. Rebuilt only when the source is newer than the binary.
// Usage: node scripts/build-launcher.mjs [--quiet]   (CC picks the compiler; default cc)
import { spawnSync } from 'node:child_process';
import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sources = ['rq-launch.c', 'launch-server.c', 'attempt.c'].map((file) => path.join(root, 'native', file));
const header = path.join(root, 'native', 'rq-launch.h');
const source = sources[0];
const target = path.join(root, 'native', 'rq-launch');
const quiet = process.argv.includes('--quiet');
const say = (line) => quiet || console.log(`build-launcher: ${line}`);

if (process.platform !== 'linux') {
  say(`not built on ${process.platform}: rq-launch uses Linux namespaces and cgroups`);
  process.exit(0);
}
if (!existsSync(source)) {
  say(`no ${path.relative(root, source)}; nothing to build`);
  process.exit(0);
}
const newest = Math.max(...[...sources, header].filter((file) => existsSync(file)).map((file) => statSync(file).mtimeMs));
if (existsSync(target) && statSync(target).mtimeMs >= newest) process.exit(0);

const cc = process.env.CC || 'cc';
const partial = `${target}.${process.pid}.tmp`;
const flags = ['-O2', '-Wall', '-Wextra', '-o', partial, ...sources];
let last;
for (const link of [['-static'], []]) {
  last = spawnSync(cc, [...link, ...flags], { encoding: 'utf8' });
  if (last.status === 0) {
    renameSync(partial, target);
    say(`built ${path.relative(root, target)} (${link.length > 0 ? 'static' : 'dynamic'}, ${cc})`);
    process.exit(0);
  }
}
rmSync(partial, { force: true });
const why = last?.error ? `${cc} not found` : `${cc} failed: ${(last?.stderr ?? '').trim().split('\n').slice(-3).join(' ')}`;
console.warn(
  `build-launcher: rq-launch not built (${why}); rollout attempts start through the util-linux chain instead ` +
    '(the same containment, a few ms more CPU per attempt). Install a C compiler (Debian: apt-get install gcc libc6-dev) and run npm run build to build it.',
);
