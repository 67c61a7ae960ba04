import { defineConfig } from 'vitest/config';

// Test layout: spec/ mirrors src/ one to one (docs/adr/0002-test-layout.md).
export default defineConfig({
  test: {
    include: ['spec/**/*.spec.ts', 'conformance/**/*.spec.ts'],
    environment: 'node',
    pool: 'forks',
    testTimeout: 60_000,
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
