import { defineConfig } from 'vitest/config';

// Test layout: spec/ mirrors src/ one to one (docs/adr/0002-test-layout.md). Three projects, one
// after the other: first the specs (in-process, real sockets, real child processes) on two workers;
// then, one file at a time on a machine nothing else loads, the fault specs whose bounds are times
// and bytes (kill -9, slow readers, memory after a burst, allocation); then the browser specs
// (headless Chromium).
const FAULTS = [
  'spec/chaos/**/*.spec.ts',
  'spec/server/slow-client.spec.ts',
  'spec/server/cluster-faults.spec.ts',
  'spec/server/idle-collector.spec.ts',
  'spec/server/hostile.spec.ts',
  'spec/server/slow-connections.spec.ts',
  'spec/cli/serve-skill-limits.spec.ts',
  'spec/bench/allocation.spec.ts',
  'spec/bench/harness.spec.ts',
  'spec/app/load.spec.ts',
  'spec/cli/dev-reload-memory.spec.ts',
];
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
        // The PostgreSQL server of the run: the given one, the machine's, or one started from npm (its
        // environment reaches every project's workers). The packed package: one folder a run, where
        // the first spec that needs the package installed packs and installs it for all of them.
        // --expose-gc: the memory bounds measure what is held, not garbage not yet collected.
        test: {
          name: 'specs',
          include: ['spec/**/*.spec.ts', 'conformance/**/*.spec.ts'],
          exclude: ['spec/browser/**', ...FAULTS],
          globalSetup: ['spec/support/postgres-setup.ts', 'spec/support/packed-setup.ts'],
          execArgv: ['--expose-gc'],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      // The same PostgreSQL set-up (a no-op once the specs' has run: it finds the server in the environment).
      {
        extends: true,
        test: {
          name: 'faults',
          include: FAULTS,
          globalSetup: ['spec/support/postgres-setup.ts'],
          execArgv: ['--expose-gc'],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['spec/browser/**/*.spec.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      exclude: ['src/cli/**', 'src/testing/**', 'src/index.ts', 'src/unstable.ts'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        'src/core/**': { lines: 95, branches: 95 },
        'src/contract/**': { lines: 90 },
      },
    },
  },
});
