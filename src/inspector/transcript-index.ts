import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileLines, jsonObjectOf, type JsonObject } from '../replay/lines.ts';
import { TRANSCRIPT_FORMAT } from '../replay/transcript.ts';

const FORMAT_TAG = /^awaken-transcript\/([1-9][0-9]{0,3})$/;
const CURRENT_FORMAT = Number(FORMAT_TAG.exec(TRANSCRIPT_FORMAT)?.[1]);

/** Whether a header of `format` may name an owner: format 5 up to this version's (a list of tags would leave out the next one). */
function ownedFormat(format: unknown): boolean {
  const n = typeof format === 'string' ? Number(FORMAT_TAG.exec(format)?.[1]) : Number.NaN;
  return n >= 5 && n <= CURRENT_FORMAT;
}

/**
 * What a transcript says of itself — the thread and run it records and the principal that owned the
 * thread — read from its own lines, never from its file name (a name is whatever someone called the
 * file). The inspector lists and serves transcripts by this alone.
 */
export interface TranscriptMeta {
  readonly thread_id: string;
  readonly run_id: string;
  /** Whom it belongs to; absent: recorded without access control, or on a thread nobody owned (the admin's alone). */
  readonly owner?: string;
  /** Which of its run's recorded segments it is, from 1 (the header's `segment`; a run taken up again from the store has several). */
  readonly segment: number;
}

export interface IndexedTranscript extends TranscriptMeta {
  readonly name: string;
  readonly bytes: number;
  readonly modified_at: number;
}

/** How far past its header a transcript whose header names no thread is read for its `run_start`. */
const RUN_START_WITHIN = 64;

/**
 * A transcript's thread, run and owner, from its lines in order: the header's `request` (its
 * `owner` only from format 5 on — older ones have none, so are nobody's), and where a header
 * names no thread or run (a run recorded with `awaken record`), the first `run_start` event's.
 * Undefined when the first line is no header.
 */
export function metaOf(lines: Iterable<string>): TranscriptMeta | undefined {
  let header: JsonObject | undefined;
  let threadId: string | undefined;
  let runId: string | undefined;
  let owner: string | undefined;
  let segment = 1;
  let read = 0;
  for (const line of lines) {
    if (header === undefined) {
      header = jsonObjectOf(line);
      if (header?.['type'] !== 'header') return undefined;
      const request = header['request'] as JsonObject | undefined;
      if (typeof request?.['thread_id'] === 'string') threadId = request['thread_id'];
      if (typeof request?.['run_id'] === 'string') runId = request['run_id'];
      if (ownedFormat(header['format']) && typeof request?.['owner'] === 'string') owner = request['owner'];
      const s = header['segment'];
      if (typeof s === 'number' && Number.isInteger(s) && s >= 2) segment = s;
      if (threadId !== undefined && runId !== undefined) break;
      continue;
    }
    if (++read > RUN_START_WITHIN) break;
    if (!line.startsWith('{"type":"event"')) continue;
    const event = jsonObjectOf(line)?.['event'] as JsonObject | undefined;
    if (event?.['event_type'] !== 'run_start') continue;
    if (threadId === undefined && typeof event['thread_id'] === 'string') threadId = event['thread_id'];
    if (runId === undefined && typeof event['run_id'] === 'string') runId = event['run_id'];
    break;
  }
  if (header === undefined || threadId === undefined || runId === undefined) return undefined;
  return { thread_id: threadId, run_id: runId, ...(owner !== undefined ? { owner } : {}), segment };
}

/**
 * The transcripts of a record directory, each file's lines read once: what a file says of itself is
 * kept by name with the size and modification time it had, and read again only when they change —
 * so a listing costs a directory read and a `stat` per file.
 */
export class TranscriptIndex {
  readonly #dir: string;
  /** Per file name: the size and time it had when read, and what it said (its listing entry, the same object while the file is unchanged). */
  readonly #known = new Map<string, { readonly size: number; readonly mtimeMs: number; readonly entry: IndexedTranscript | undefined; seen: number }>();
  #pass = 0;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** Every transcript of the directory (a `.jsonl` file whose first line is a header), as its lines describe it. */
  list(): IndexedTranscript[] {
    const pass = ++this.#pass;
    const out: IndexedTranscript[] = [];
    const prefix = join(this.#dir, '/');
    for (const entry of readdirSync(this.#dir, { withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.jsonl')) continue;
      const path = prefix + entry.name;
      const stat = statSync(path, { throwIfNoEntry: false });
      if (stat === undefined) continue; // gone meanwhile
      let known = this.#known.get(entry.name);
      if (known === undefined || known.size !== stat.size || known.mtimeMs !== stat.mtimeMs) {
        let meta: TranscriptMeta | undefined;
        try {
          meta = metaOf(fileLines(path));
        } catch {
          meta = undefined;
        }
        known = {
          size: stat.size,
          mtimeMs: stat.mtimeMs,
          entry: meta === undefined ? undefined : { name: entry.name, ...meta, bytes: stat.size, modified_at: Math.floor(stat.mtimeMs) },
          seen: pass,
        };
        this.#known.set(entry.name, known);
      }
      known.seen = pass;
      if (known.entry !== undefined) out.push(known.entry);
    }
    for (const [name, known] of this.#known) if (known.seen !== pass) this.#known.delete(name);
    return out;
  }
}
