import { MemoryStore } from '../../src/stores/memory.ts';
import { storeConformance } from '../support/store-conformance.ts';

storeConformance('memory', { open: async () => new MemoryStore() });
