import { defineConfig } from 'vitest/config';

// Test layout: spec/ mirrors src/ one to one (docs/adr/0002-test-layout.md). Two projects: the specs
// (in-process, real sockets, real child processes) and the browser specs (headless Chromium).
export default defineConfig({
  // The package's own name resolves to its sources in the specs (the published entry points are
  // dist/, checked by the consumer smoke test).
  resolve: { conditions: ['awaken-source'] },
  ssr: { resolve: { conditions: ['awaken-source'] } },
  test: {
    environment: 'node',
    pool: 'forks',
    testTimeout: 60_000,
    // Hooks start servers, browsers and databases: as generous as a test, so a loaded machine is not a failure.
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        // The PostgreSQL server of the run: the given one, the machine's, or one started from npm.
        // --expose-gc: the memory bounds of spec/chaos/ measure what is held, not garbage not yet collected.
        test: { name: 'specs', include: ['spec/**/*.spec.ts', 'conformance/**/*.spec.ts'], exclude: ['spec/browser/**'], globalSetup: ['spec/support/postgres-setup.ts'], execArgv: ['--expose-gc'] },
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
