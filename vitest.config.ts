import { defineConfig } from 'vitest/config';

// Tiers as separate projects with their own timeouts (unit: no I/O beyond temp files;
// integration: one component against real Redis and real processes; e2e: the whole seam,
// coordinator to workers, with real signals). Timings live in bench/, never here.
// `npm test` is ONE `vitest run` of all four: `sequence.groupOrder` runs the tiers in turn
// (unit, then integration, then e2e, then hostile), each with its own parallelism; a tier's failures do not
// stop the next one (no `bail`), every tier reports, and the exit code is non-zero if any failed.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 20_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 60_000,
          // Two cores: chaos tests kill and time processes, so run two files at once at most.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          // Issue 28: one small artifact per attack on the plane, run by codeRunner at the strongest
          // level (where it must fail) and at each weaker level that can be forced (where it must
          // succeed exactly where docs/security.md lists the boundary open). Real processes and Redis.
          name: 'hostile',
          include: ['test/hostile/**/*.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 60_000,
          maxWorkers: 2,
          // Its own group (vitest refuses two projects with different parallelism in one group):
          // after e2e, so a hostile artifact never shares the machine with a timing-sensitive tier.
          sequence: { groupOrder: 3 },
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 60_000,
          maxWorkers: 2,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
