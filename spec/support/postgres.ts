/**
 * The real PostgreSQL server the specs use, chosen by the global setup (spec/support/postgres-setup.ts):
 * `AWAKEN_TEST_POSTGRES`, the machine's server, or one started from npm. No skip: an unreachable
 * server fails the suites that need it.
 */
export const PG_URL = process.env['AWAKEN_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Where that server came from: `env`, `machine` or `embedded`. */
export const PG_SOURCE = process.env['AWAKEN_TEST_POSTGRES_SOURCE'] ?? 'unknown';

/** The store URL of `PG_URL` with a table prefix (`?prefix=`), as `awaken serve --store` takes it. */
export function pgUrlWithPrefix(prefix: string): string {
  const url = new URL(PG_URL);
  url.searchParams.set('prefix', prefix);
  return url.toString();
}

/** Drops every table a store and a cluster bus made under `prefix`. */
export async function dropPrefix(prefix: string): Promise<void> {
  const { PostgresStore } = await import('../../src/stores/postgres.ts');
  const { PostgresBus } = await import('../../src/stores/postgres-bus.ts');
  const store = PostgresStore.withPrefix(PG_URL, prefix);
  await store.dropSchema();
  await store.close();
  const bus = new PostgresBus(PG_URL, { prefix });
  await bus.dropSchema();
  await bus.close();
}
