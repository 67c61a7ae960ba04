import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/stores/sqlite.ts';
import { storeConformance, type StoreFactory } from '../support/store-conformance.ts';
import { metaConformance } from './meta-conformance.ts';

const paths = new WeakMap<object, string>();
const factory: StoreFactory = {
  open: async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'awaken-sqlite-')), 'data', 'awaken.db');
    const store = new SqliteStore(path);
    paths.set(store, path);
    return store;
  },
  reopen: async (old) => {
    await old.close();
    return new SqliteStore(paths.get(old) as string);
  },
};
storeConformance('sqlite', factory);
metaConformance('sqlite', factory);
