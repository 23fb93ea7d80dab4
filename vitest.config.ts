import { defineConfig } from 'vitest/config';

// Tiers as separate projects with their own timeouts (unit: no I/O beyond temp files;
// integration: real Redis, real processes, real signals). Timings live in bench/, never here.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 20_000,
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
        },
      },
    ],
  },
});
