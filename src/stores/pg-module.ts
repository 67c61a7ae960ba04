import { createRequire } from 'node:module';
import type pg from 'pg';

/**
 * The `pg` package, loaded when a PostgreSQL store or bus is made: an optional peer dependency, so
 * a project that never asks for PostgreSQL does not need it. Missing, it is an error saying what to
 * install.
 */
export function loadPg(): typeof pg {
  try {
    return createRequire(import.meta.url)('pg') as typeof pg;
  } catch (e) {
    if ((e as { code?: string }).code === 'MODULE_NOT_FOUND') {
      throw new Error('the PostgreSQL store needs the package pg: npm install pg@8 (an optional peer dependency of awaken-ts)');
    }
    throw e;
  }
}

/** Runs `body` in one transaction on a client of `pool`: committed when it resolves, rolled back when it throws. */
export async function inTransaction<T>(pool: pg.Pool, body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const out = await body(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}
