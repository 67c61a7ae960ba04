import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * The worker's whole program (CommonJS, as an eval'd worker runs): its own connection to the
 * database, which copies the write-ahead log into the database file when asked and closes when told.
 * A checkpoint is where SQLite syncs the file to disk; on its own thread that wait no longer stalls
 * the writes of the thread that serves runs. PASSIVE: it never waits for the writer nor blocks it.
 */
const PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.library);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 0');
parentPort.on('message', (m) => {
  if (m === 'close') {
    if (db.open) db.close();
    parentPort.close();
    return;
  }
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (e) {
    // Whatever it is (the file replaced, an I/O error), the writer takes the work back.
    parentPort.postMessage(String(e));
  }
});
`;

/** Commits between two checkpoints: about the log SQLite's own default lets grow (1,000 pages) at two to three pages a commit. */
export const COMMITS_PER_CHECKPOINT = 256;

/**
 * Checkpoints of a WAL database on a thread of their own. The writer counts its commits and nudges
 * the worker every `every`; the worker starts at the first nudge, so a store that writes little
 * never starts one. If the worker cannot start, the writer's own automatic checkpoint (kept as a
 * backstop at a larger size) does the work as before.
 */
export class WalCheckpointer {
  readonly #path: string;
  readonly #every: number;
  readonly #fallBack: () => void;
  readonly #library: string | undefined;
  #worker: Worker | undefined;
  /** Settles when the worker has exited, however it ended (set when it starts). */
  #exited: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #commits = 0;
  #failed = false;
  #checkpoints = 0;

  /** `fallBack` runs once if the worker cannot do its work; `library`: where better-sqlite3 is (default: resolved from here). */
  constructor(path: string, fallBack: () => void, options: { readonly every?: number; readonly library?: string } = {}) {
    this.#path = resolve(path);
    this.#every = options.every ?? COMMITS_PER_CHECKPOINT;
    this.#fallBack = fallBack;
    this.#library = options.library;
  }

  /** Checkpoints asked of the worker so far. */
  get asked(): number {
    return this.#checkpoints;
  }

  /** One commit made; every `every` commits the worker is asked to checkpoint. */
  committed(): void {
    if (++this.#commits < this.#every || this.#failed) return;
    this.#commits = 0;
    this.#checkpoints++;
    this.#start()?.postMessage('checkpoint');
  }

  #start(): Worker | undefined {
    if (this.#worker !== undefined) return this.#worker;
    try {
      const library = this.#library ?? createRequire(import.meta.url).resolve('better-sqlite3');
      const worker = new Worker(PROGRAM, { eval: true, workerData: { library, path: this.#path } });
      // A checkpointer never keeps a process alive: what it has not copied stays in the log, which the next open reads.
      worker.unref();
      this.#exited = new Promise<void>((done) => worker.once('exit', () => done()));
      worker.on('error', () => this.#fail());
      worker.on('message', () => this.#fail());
      this.#worker = worker;
      return worker;
    } catch {
      this.#fail();
      return undefined;
    }
  }

  /** The worker could not do its work: the writer's own checkpoint takes it back, once; the worker is let go. */
  #fail(): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#worker?.postMessage('close');
    this.#fallBack();
  }

  /** Closes the worker's connection before the writer closes its own (the last one to close folds the log into the file). */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#failed = true;
    const worker = this.#worker;
    const exited = this.#exited;
    if (worker === undefined || exited === undefined) return;
    worker.postMessage('close');
    const timer = setTimeout(() => void worker.terminate(), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
