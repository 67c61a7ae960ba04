import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PG_SOURCE, PG_URL } from '../support/postgres.ts';

/**
 * Which PostgreSQL the run used. `.ci/run`'s fresh-clone job closes the default port and sets
 * `AWAKEN_EXPECT_PG=embedded`: the run must have started its own server from npm.
 */
describe('the PostgreSQL server of this run', () => {
  it('is the one it was meant to be, and it answers', async () => {
    const expected = process.env['AWAKEN_EXPECT_PG'];
    if (expected !== undefined && expected !== '') expect(PG_SOURCE).toBe(expected);
    else expect(['env', 'machine', 'embedded']).toContain(PG_SOURCE);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '';
      // The embedded server is the npm package's PostgreSQL 18.
      if (PG_SOURCE === 'embedded') expect(version).toMatch(/^18\./);
      else expect(version).toMatch(/^\d+\./);
    } finally {
      await client.end();
    }
  });
});
