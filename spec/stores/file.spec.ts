import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStore } from '../../src/stores/file.ts';
import { storeConformance, type StoreFactory } from '../support/store-conformance.ts';
import { metaConformance } from './meta-conformance.ts';

const roots = new WeakMap<object, string>();
const factory: StoreFactory = {
  open: async () => {
    const root = mkdtempSync(join(tmpdir(), 'awaken-file-'));
    const store = new FileStore(root);
    roots.set(store, root);
    return store;
  },
  reopen: async (old) => {
    await old.close();
    return new FileStore(roots.get(old) as string);
  },
};
storeConformance('file', factory);
metaConformance('file', factory);
