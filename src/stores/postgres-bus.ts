import type pg from 'pg';
import { loadPg } from './pg-module.ts';
import type { ClusterBus, ControlCommand, SharedFrame } from '../runtime/cluster-bus.ts';
import { StoreFailure } from '../runtime/store.ts';

const PREFIX = /^[a-z][a-z0-9_]{0,30}$/;

/**
 * The cluster bus on PostgreSQL: table `<prefix>_events (thread_id, seq, run_id, data)` holds every
 * thread's log; `NOTIFY <prefix>_events` carries the thread id that grew and `NOTIFY <prefix>_control`
 * a JSON command. One dedicated connection listens.
 */
export class PostgresBus implements ClusterBus {
  readonly #pool: pg.Pool;
  readonly #p: string;
  readonly #connection: string;
  #listener: pg.Client | undefined;
  #ready: Promise<void> | undefined;

  constructor(connection: string, options: { readonly prefix?: string } = {}) {
    const prefix = options.prefix ?? 'awaken';
    if (!PREFIX.test(prefix)) throw new StoreFailure({ code: 'validation', message: `invalid table prefix: ${prefix}` });
    this.#p = prefix;
    this.#connection = connection;
    this.#pool = new (loadPg().Pool)({ connectionString: connection, max: 4 });
    this.#pool.on('error', () => undefined);
  }

  #schema(): Promise<void> {
    this.#ready ??= this.#pool
      .query(
        `CREATE TABLE IF NOT EXISTS ${this.#p}_events (thread_id TEXT NOT NULL, seq BIGINT NOT NULL, run_id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (thread_id, seq))`,
      )
      .then(() => undefined)
      .catch((e: unknown) => {
        this.#ready = undefined;
        throw e;
      });
    return this.#ready;
  }

  async append(threadId: string, frames: readonly SharedFrame[]): Promise<void> {
    if (frames.length === 0) return;
    await this.#schema();
    await this.#pool.query(
      `WITH rows AS (SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[]) AS t(seq, run_id, data))
       INSERT INTO ${this.#p}_events (thread_id, seq, run_id, data) SELECT $1, seq, run_id, data FROM rows ON CONFLICT DO NOTHING`,
      [threadId, frames.map((f) => f.seq), frames.map((f) => f.runId), frames.map((f) => f.data)],
    );
    await this.#pool.query('SELECT pg_notify($1, $2)', [`${this.#p}_events`, threadId]);
  }

  async read(threadId: string, afterSeq: number, limit: number): Promise<SharedFrame[]> {
    await this.#schema();
    const r = await this.#pool.query<{ seq: string; run_id: string; data: string }>(
      `SELECT seq, run_id, data FROM ${this.#p}_events WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [threadId, afterSeq, limit],
    );
    return r.rows.map((x) => ({ seq: Number(x.seq), runId: x.run_id, data: x.data }));
  }

  async lastSeq(threadId: string): Promise<number> {
    await this.#schema();
    const r = await this.#pool.query<{ n: string | null }>(`SELECT max(seq) AS n FROM ${this.#p}_events WHERE thread_id = $1`, [threadId]);
    return Number(r.rows[0]?.n ?? 0);
  }

  async send(command: ControlCommand): Promise<void> {
    await this.#pool.query('SELECT pg_notify($1, $2)', [`${this.#p}_control`, JSON.stringify(command)]);
  }

  async listen(onAppend: (threadId: string) => void, onCommand: (command: ControlCommand) => void): Promise<void> {
    await this.#schema();
    const client = new (loadPg().Client)({ connectionString: this.#connection });
    client.on('error', () => undefined);
    await client.connect();
    client.on('notification', (n) => {
      if (n.channel === `${this.#p}_events` && n.payload !== undefined) onAppend(n.payload);
      else if (n.channel === `${this.#p}_control` && n.payload !== undefined) {
        try {
          onCommand(JSON.parse(n.payload) as ControlCommand);
        } catch {
          // A malformed command is ignored.
        }
      }
    });
    await client.query(`LISTEN ${this.#p}_events`);
    await client.query(`LISTEN ${this.#p}_control`);
    this.#listener = client;
  }

  /** Drops the events table (tests). */
  async dropSchema(): Promise<void> {
    await this.#pool.query(`DROP TABLE IF EXISTS ${this.#p}_events`);
    this.#ready = undefined;
  }

  async close(): Promise<void> {
    await this.#listener?.end().catch(() => undefined);
    this.#listener = undefined;
    await this.#pool.end();
  }
}
