import { resolve } from 'node:path';
import { FileStore } from './file.ts';
import { MemoryStore } from './memory.ts';
import type { Store } from '../runtime/store.ts';
import { PostgresBus } from './postgres-bus.ts';
import { PostgresStore } from './postgres.ts';
import { SqliteStore } from './sqlite.ts';

export * from '../runtime/store.ts';
export type { PostgresConnection } from './postgres.ts';
export { FileStore, MemoryStore, PostgresBus, PostgresStore, SqliteStore };

/** The cluster bus of a shared store (`postgres://…`, same database and prefix); none for the others. */
export function openBus(spec: string): PostgresBus | undefined {
  if (!spec.startsWith('postgres://') && !spec.startsWith('postgresql://')) return undefined;
  const url = new URL(spec);
  const prefix = url.searchParams.get('prefix') ?? undefined;
  url.searchParams.delete('prefix');
  return new PostgresBus(url.toString(), prefix !== undefined ? { prefix } : {});
}

/**
 * A store from its `--store` spelling: `memory`, `sqlite:PATH`, `file:DIR`, or a `postgres://` /
 * `postgresql://` URL (an optional `?prefix=` picks the table prefix). Anything else is an error
 * message.
 */
export function openStore(spec: string): Store | string {
  if (spec === 'memory') return new MemoryStore();
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    if (path === '') return 'sqlite: needs a path (sqlite:./data/awaken.db)';
    try {
      return new SqliteStore(path === ':memory:' ? path : resolve(path));
    } catch (e) {
      return e instanceof Error ? e.message : String(e);
    }
  }
  if (spec.startsWith('file:')) {
    const dir = spec.slice('file:'.length);
    return dir === '' ? 'file: needs a directory (file:./data)' : new FileStore(resolve(dir));
  }
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) {
    const url = new URL(spec);
    const prefix = url.searchParams.get('prefix') ?? undefined;
    url.searchParams.delete('prefix');
    try {
      return new PostgresStore(url.toString(), prefix !== undefined ? { prefix } : {});
    } catch (e) {
      return e instanceof Error ? e.message : String(e);
    }
  }
  return `unknown store '${spec}': use memory, sqlite:PATH, file:DIR or postgres://…`;
}
