import { afterAll } from 'vitest';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { storeConformance } from '../support/store-conformance.ts';

/**
 * Runs against the real server (`.ci/run` starts it): AWAKEN_TEST_POSTGRES, or the local cluster's
 * `test` database. No skip: an unreachable server fails the suite.
 */
export const PG_URL = process.env['AWAKEN_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/test';

let n = 0;
const prefixes = new WeakMap<object, string>();
const used: string[] = [];
afterAll(async () => {
  // The suite closed its stores; the tables are dropped through a store of their own.
  for (const prefix of new Set(used)) {
    const s = PostgresStore.withPrefix(PG_URL, prefix);
    await s.dropSchema();
    await s.close();
  }
});

storeConformance('postgres', {
  open: async () => {
    const prefix = `t${process.pid}_${++n}`;
    const store = PostgresStore.withPrefix(PG_URL, prefix);
    await store.dropSchema();
    await store.ensureSchema();
    prefixes.set(store, prefix);
    used.push(prefix);
    return store;
  },
  reopen: async (old) => {
    return PostgresStore.withPrefix(PG_URL, prefixes.get(old) as string);
  },
});
