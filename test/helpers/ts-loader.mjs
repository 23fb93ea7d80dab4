// Lets a child process run this repo's TypeScript without a build: `node --import ./test/helpers/ts-loader.mjs file.ts`.
// Node 20 has no type stripping, and tests must run real processes (kill them with real signals),
// so the hooks in ts-loader-hooks.mjs transpile .ts files with the project's own `typescript`.
import { register } from 'node:module';

register('./ts-loader-hooks.mjs', import.meta.url);
