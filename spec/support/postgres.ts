/**
 * The real PostgreSQL server the specs use, chosen by the global setup (spec/support/postgres-setup.ts):
 * `AWAKEN_TEST_POSTGRES`, the machine's server, or one started from npm. No skip: an unreachable
 * server fails the suites that need it.
 */
export const PG_URL = process.env['AWAKEN_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Where that server came from: `env`, `machine` or `embedded`. */
export const PG_SOURCE = process.env['AWAKEN_TEST_POSTGRES_SOURCE'] ?? 'unknown';
