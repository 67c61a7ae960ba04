import { afterAll } from 'vitest';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { PG_URL } from '../support/postgres.ts';
import { storeConformance, type StoreFactory } from '../support/store-conformance.ts';
import { metaConformance } from './meta-conformance.ts';

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

const factory: StoreFactory = {
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
};
storeConformance('postgres', factory);
metaConformance('postgres', factory);
