#!/usr/bin/env node
// Writes schema/*.json from the zod wire contract (dist/spec). With --check, fails when the
// committed files differ from what the code generates (run in `npm test`).
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { wireJsonSchemas } from '../dist/spec/index.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const check = process.argv.includes('--check');
let stale = 0;
await mkdir(path.join(root, 'schema'), { recursive: true });
for (const [stem, schema] of Object.entries(wireJsonSchemas())) {
  const file = path.join(root, 'schema', `${stem}.json`);
  const text = `${JSON.stringify(schema, null, 2)}\n`;
  if (check) {
    const committed = await readFile(file, 'utf8').catch(() => '');
    if (committed !== text) {
      console.error(`schema/${stem}.json is out of date with src/spec; run \`npm run schema\` and commit it.`);
      stale++;
    }
  } else {
    await writeFile(file, text);
    console.log(`wrote schema/${stem}.json`);
  }
}
process.exit(stale ? 1 : 0);
