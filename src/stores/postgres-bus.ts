import type pg from 'pg';
import { inTransaction, loadPg } from './pg-module.ts';
import type { BusStatus, ClusterBus, ControlCommand, SharedFrame } from '../runtime/cluster-bus.ts';
import { StoreFailure } from '../runtime/store.ts';

const PREFIX = /^[a-z][a-z0-9_]{0,30}$/;

/** A run's last frame: its `run_finish`, unless the run only suspended (it goes on when decided). */
function isFinalTerminal(frame: SharedFrame): boolean {
  if (!frame.data.startsWith('{"event_type":"run_finish"')) return false;
  const termination = (JSON.parse(frame.data) as { termination?: { type?: string } }).termination;
  return termination?.type !== 'suspended';
}

/**
 * The cluster bus on PostgreSQL: table `<prefix>_events (thread_id, seq, run_id, data)` holds every
 * thread's log (and `<prefix>_ended_runs` the runs whose final frame is in it); `NOTIFY <prefix>_events` carries the thread id that grew and `NOTIFY <prefix>_control`
 * a JSON command. One dedicated connection listens; when it is lost (the server restarted, the backend
 * was terminated, the network dropped) it is re-established with back-off (100 ms doubling to 5 s).
 * Connections carry `application_name` `awaken:<prefix>`.
 */
export class PostgresBus implements ClusterBus {
  readonly #pool: pg.Pool;
  readonly #p: string;
  readonly #connection: string;
  #listener: pg.Client | undefined;
  #ready: Promise<void> | undefined;
  #status: BusStatus = 'down';
  #closed = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #handlers:
    | { onAppend: (threadId: string) => void; onCommand: (command: ControlCommand) => void; onStatus: (status: BusStatus, cause?: unknown) => void }
    | undefined;

  readonly #firstRetryMs: number;

  constructor(
    connection: string,
    options: { readonly prefix?: string /** The first reconnect delay (default 100 ms; it doubles to 5 s). */; readonly reconnectMs?: number } = {},
  ) {
    this.#firstRetryMs = options.reconnectMs ?? 100;
    const prefix = options.prefix ?? 'awaken';
    if (!PREFIX.test(prefix)) throw new StoreFailure({ code: 'validation', message: `invalid table prefix: ${prefix}` });
    this.#p = prefix;
    this.#connection = connection;
    this.#pool = new (loadPg().Pool)({ connectionString: connection, max: 4, application_name: `awaken:${prefix}`, keepAlive: true });
    this.#pool.on('error', () => undefined);
  }

  /** Creates the events table once, under an advisory lock: instances starting together do not race on it. */
  #schema(): Promise<void> {
    this.#ready ??= inTransaction(this.#pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.#p}_events`]);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.#p}_events (thread_id TEXT NOT NULL, seq BIGINT NOT NULL, run_id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (thread_id, seq))`,
      );
      // The runs whose final terminal frame is in the log: no frame of theirs is appended after it.
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.#p}_ended_runs (run_id TEXT PRIMARY KEY)`);
    }).catch((e: unknown) => {
      this.#ready = undefined;
      throw e;
    });
    return this.#ready;
  }

  /**
   * Appends frames, except those of a run whose final terminal frame (a `run_finish` that is not a
   * suspension) is already in the log: that run was ended — by another instance, when this one was
   * cut off past its lease and swept (ADR 0015). Appends of a thread are serialised across instances
   * (an advisory lock held by the transaction), so a run's end and a late frame of it never cross.
   */
  async append(threadId: string, frames: readonly SharedFrame[]): Promise<void> {
    if (frames.length === 0) return;
    await this.#appendLocked(threadId, async () => frames);
  }

  /** Appends one frame after the thread's last, under the same lock; returns its `seq` (0 when dropped). */
  async appendNext(threadId: string, frame: Omit<SharedFrame, 'seq'>): Promise<number> {
    let seq = 0;
    const kept = await this.#appendLocked(threadId, async (client) => {
      const last = await client.query<{ n: string | null }>(`SELECT max(seq) AS n FROM ${this.#p}_events WHERE thread_id = $1`, [threadId]);
      seq = Number(last.rows[0]?.n ?? 0) + 1;
      return [{ seq, ...frame }];
    });
    return kept > 0 ? seq : 0;
  }

  async #appendLocked(threadId: string, framesOf: (client: pg.PoolClient) => Promise<readonly SharedFrame[]>): Promise<number> {
    await this.#schema();
    const kept = await inTransaction(this.#pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.#p}_events:${threadId}`]);
      const frames = await framesOf(client);
      const runs = [...new Set(frames.map((f) => f.runId))];
      const ended = new Set(
        (await client.query<{ run_id: string }>(`SELECT run_id FROM ${this.#p}_ended_runs WHERE run_id = ANY($1::text[])`, [runs])).rows.map((r) => r.run_id),
      );
      const fresh = ended.size === 0 ? frames : frames.filter((f) => !ended.has(f.runId));
      if (fresh.length > 0) {
        await client.query(
          `WITH rows AS (SELECT * FROM unnest($2::bigint[], $3::text[], $4::text[]) AS t(seq, run_id, data))
           INSERT INTO ${this.#p}_events (thread_id, seq, run_id, data) SELECT $1, seq, run_id, data FROM rows ON CONFLICT DO NOTHING`,
          [threadId, fresh.map((f) => f.seq), fresh.map((f) => f.runId), fresh.map((f) => f.data)],
        );
        const finals = fresh.filter(isFinalTerminal).map((f) => f.runId);
        if (finals.length > 0) await client.query(`INSERT INTO ${this.#p}_ended_runs (run_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, [finals]);
      }
      return fresh;
    });
    if (kept.length > 0) await this.#pool.query('SELECT pg_notify($1, $2)', [`${this.#p}_events`, threadId]);
    return kept.length;
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

  async forget(threadId: string): Promise<void> {
    await this.#schema();
    // Under the thread's append lock: no append of it crosses the deletion.
    await inTransaction(this.#pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.#p}_events:${threadId}`]);
      await client.query(`DELETE FROM ${this.#p}_events WHERE thread_id = $1`, [threadId]);
    });
  }

  async send(command: ControlCommand): Promise<void> {
    await this.#pool.query('SELECT pg_notify($1, $2)', [`${this.#p}_control`, JSON.stringify(command)]);
  }

  get status(): BusStatus {
    return this.#status;
  }

  async listen(
    onAppend: (threadId: string) => void,
    onCommand: (command: ControlCommand) => void,
    onStatus: (status: BusStatus, cause?: unknown) => void = () => undefined,
  ): Promise<void> {
    await this.#schema();
    this.#handlers = { onAppend, onCommand, onStatus };
    await this.#connectListener();
  }

  async #connectListener(): Promise<void> {
    const handlers = this.#handlers;
    if (handlers === undefined || this.#closed) return;
    const client = new (loadPg().Client)({ connectionString: this.#connection, application_name: `awaken:${this.#p}`, keepAlive: true });
    client.on('error', (e: unknown) => this.#lost(client, e));
    client.on('end', () => this.#lost(client, new Error('the listening connection ended')));
    client.on('notification', (n) => {
      if (n.channel === `${this.#p}_events` && n.payload !== undefined) handlers.onAppend(n.payload);
      else if (n.channel === `${this.#p}_control` && n.payload !== undefined) {
        let command: ControlCommand;
        try {
          command = JSON.parse(n.payload) as ControlCommand;
        } catch {
          return; // a malformed command is ignored
        }
        handlers.onCommand(command);
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.#p}_events`);
      await client.query(`LISTEN ${this.#p}_control`);
    } catch (e) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      throw e;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#listener = client;
    this.#status = 'listening';
    handlers.onStatus('listening');
  }

  /** The listening connection is gone: told once, then re-established with back-off. */
  #lost(client: pg.Client, cause: unknown): void {
    if (this.#listener !== client || this.#closed) return;
    this.#listener = undefined;
    this.#status = 'down';
    client.end().catch(() => undefined);
    this.#handlers?.onStatus('down', cause);
    this.#reconnect(this.#firstRetryMs);
  }

  #reconnect(delay: number): void {
    if (this.#closed) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#connectListener().catch((e: unknown) => {
        this.#handlers?.onStatus('down', e);
        this.#reconnect(Math.min(delay * 2, 5_000));
      });
    }, delay);
  }

  /** Drops the bus's tables (tests). */
  async dropSchema(): Promise<void> {
    await this.#pool.query(`DROP TABLE IF EXISTS ${this.#p}_events, ${this.#p}_ended_runs`);
    this.#ready = undefined;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    const listener = this.#listener;
    this.#listener = undefined;
    this.#status = 'down';
    await listener?.end().catch(() => undefined);
    await this.#pool.end();
  }
}
