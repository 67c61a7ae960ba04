import { defineConfig } from 'vitest/config';

// Test layout: spec/ mirrors src/ one to one (docs/adr/0002-test-layout.md). Two projects: the specs
// (in-process, real sockets, real child processes) and the browser specs (headless Chromium).
export default defineConfig({
  test: {
    environment: 'node',
    pool: 'forks',
    testTimeout: 60_000,
    projects: [
      {
        extends: true,
        // The PostgreSQL server of the run: the given one, the machine's, or one started from npm.
        test: { name: 'specs', include: ['spec/**/*.spec.ts', 'conformance/**/*.spec.ts'], exclude: ['spec/browser/**'], globalSetup: ['spec/support/postgres-setup.ts'] },
      },
      { extends: true, test: { name: 'browser', include: ['spec/browser/**/*.spec.ts'], testTimeout: 120_000, hookTimeout: 120_000 } },
    ],
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      exclude: ['src/cli/**', 'src/testing/**', 'src/index.ts'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        'src/core/**': { lines: 95, branches: 95 },
        'src/contract/**': { lines: 90 },
      },
    },
  },
});
