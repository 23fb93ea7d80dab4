#!/usr/bin/env node
// Thin launcher: the CLI is compiled TypeScript in dist/ (built by `npm ci` via `prepare`).
import('../dist/cli/main.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli')) {
    console.error('rollout-queue: dist/ is missing. Run `npm run build` (or `npm ci`) first.');
    process.exit(2);
  }
  throw err;
});
