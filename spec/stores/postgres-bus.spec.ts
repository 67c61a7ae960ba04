import { afterAll, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../src/stores/postgres-bus.ts';
import { PostgresStore } from '../../src/stores/postgres.ts';
import { PG_URL } from '../support/postgres.ts';

/** Instances of a cluster starting at the same moment on an empty database. */
const prefix = `pb${process.pid}`;
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const o of opened) await o.close().catch(() => undefined);
  const bus = new PostgresBus(PG_URL, { prefix });
  await bus.dropSchema();
  await bus.close();
  const store = PostgresStore.withPrefix(PG_URL, prefix);
  await store.dropSchema();
  await store.close();
});

describe('eight instances starting together', () => {
  it('create the events table and the store tables once, none failing on the race', async () => {
    const buses = Array.from({ length: 8 }, () => new PostgresBus(PG_URL, { prefix }));
    const stores = Array.from({ length: 8 }, () => PostgresStore.withPrefix(PG_URL, prefix));
    opened.push(...buses, ...stores);
    const results = await Promise.allSettled([...buses.map((b) => b.lastSeq('t')), ...stores.map((s) => s.ensureSchema())]);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
  });
});
