/**
 * The real PostgreSQL server the specs use (`.ci/run` starts it): AWAKEN_TEST_POSTGRES, or the local
 * cluster's `test` database. No skip: an unreachable server fails the suites that need it.
 */
export const PG_URL = process.env['AWAKEN_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/test';
