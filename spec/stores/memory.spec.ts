import { MemoryStore } from '../../src/stores/memory.ts';
import { storeConformance, type StoreFactory } from '../support/store-conformance.ts';
import { metaConformance } from './meta-conformance.ts';

const factory: StoreFactory = { open: async () => new MemoryStore() };
storeConformance('memory', factory);
metaConformance('memory', factory);
