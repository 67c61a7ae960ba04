import { existsSync, lstatSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { Hono } from 'hono';
import { z } from 'zod';
import { replayTranscript } from '../replay/replayer.ts';
import type { Store } from '../runtime/store.ts';
import { bodyOf, HttpError } from '../server/http-support.ts';
import { currentPrincipal, mayReach } from '../server/principal.ts';
import { metaOf, TranscriptIndex, type TranscriptMeta } from './transcript-index.ts';

/**
 * The run inspector (docs/inspector.md, ADR 0033): the page at `/inspector` (static files built with
 * the package, no CDN), and the API it reads besides the server's own routes — the transcripts
 * `awaken serve --record DIR` wrote, and a replay of a transcript in the server. Behind the same
 * access control as the API: the page is public, like a login page; every `/v1/inspector` route
 * needs a credential when tokens are configured, and a transcript is listed and served only to the
 * principal its header names as the owner, while the thread it records is still theirs (a transcript
 * nobody owns, to the admin alone). Its file name decides nothing.
 */
export interface InspectorOptions {
  /** The store the server runs on (thread ownership is checked against it). */
  readonly store: Store;
  /** Where the server records transcripts (`--record DIR`); without it there are none to list. */
  readonly recordDir?: string;
  /** The page's built files (default: `dist/inspector-page` of the package). */
  readonly assetsDir?: string;
}


export interface TranscriptEntry {
  readonly name: string;
  readonly thread_id: string;
  readonly run_id: string;
  /** Which of its run's segments it records, from 1: a run let go while parked and taken up again goes on in the next. */
  readonly segment: number;
  readonly bytes: number;
  readonly modified_at: number;
}

const TYPES: Readonly<Record<string, string>> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png', '.json': 'application/json' };

/** The page's own files only, from its own origin: nothing to load from elsewhere, nothing inline. */
const PAGE_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** The built page: the package's `dist/inspector-page`, from the sources or from `dist/`. */
export function defaultAssetsDir(): string | undefined {
  const candidates = [new URL('../../dist/inspector-page/', import.meta.url), new URL('../inspector-page/', import.meta.url)];
  for (const c of candidates) if (existsSync(new URL('index.html', c))) return c.pathname;
  return undefined;
}

/** A file of the record directory, as the API names it: a plain name (nothing to climb out with). */
const FILE_NAME = /^(?!\.)[^/\\\u0000]{1,250}\.jsonl$/;

const ReplayBodySchema = z
  .object({ transcript: z.string().min(1).optional(), name: z.string().regex(FILE_NAME).optional() })
  .strict()
  .refine((b) => (b.transcript === undefined) !== (b.name === undefined), { message: 'give a transcript or the name of a recorded one, not both', path: ['transcript'] });

export function inspectorRoutes(options: InspectorOptions): Hono {
  const app = new Hono();
  const assets = options.assetsDir ?? defaultAssetsDir();
  const index = options.recordDir !== undefined ? new TranscriptIndex(options.recordDir) : undefined;

  /**
   * Whether the caller may read a transcript: without a principal (no tokens, or the admin) any; else
   * one whose header names the caller as its owner, while the thread it records is still theirs — a
   * thread deleted and taken by another principal does not pass its old transcripts on, and a
   * transcript with no owner is nobody's but the admin's.
   */
  const readable = async (meta: TranscriptMeta, threads: Map<string, boolean> = new Map()): Promise<boolean> => {
    const principal = currentPrincipal();
    if (principal === undefined) return true;
    if (meta.owner !== principal) return false;
    let reach = threads.get(meta.thread_id);
    if (reach === undefined) threads.set(meta.thread_id, (reach = await mayReach(options.store, meta.thread_id, 'read')));
    return reach;
  };

  /** The transcripts of the record directory the caller may read, newest first. */
  const transcripts = async (threadId?: string): Promise<TranscriptEntry[]> => {
    const dir = options.recordDir;
    if (index === undefined || dir === undefined || !existsSync(dir)) return [];
    const out: TranscriptEntry[] = [];
    // One ownership check per thread, however many of its runs were recorded.
    const threads = new Map<string, boolean>();
    for (const t of index.list()) {
      if (threadId !== undefined && t.thread_id !== threadId) continue;
      if (!(await readable(t, threads))) continue;
      out.push({ name: t.name, thread_id: t.thread_id, run_id: t.run_id, segment: t.segment, bytes: t.bytes, modified_at: t.modified_at });
    }
    return out.sort((a, b) => b.modified_at - a.modified_at || (a.name < b.name ? -1 : 1));
  };

  /** A recorded transcript's text, when it is a file of the record directory and the caller may read what it says it is. */
  const transcriptText = async (name: string): Promise<string> => {
    const dir = options.recordDir;
    const missing = new HttpError(404, 'transcript_not_found', `no recorded transcript ${name}`);
    if (dir === undefined || !FILE_NAME.test(name)) throw missing;
    const path = join(dir, name);
    let text: string;
    try {
      if (!lstatSync(path).isFile()) throw missing;
      text = readFileSync(path, 'utf8');
    } catch {
      throw missing;
    }
    // Authorised on the text served, not on what a listing read before.
    const meta = metaOf(text.split('\n'));
    if (meta === undefined || !(await readable(meta))) throw missing;
    return text;
  };

  // ---- the page ---------------------------------------------------------------------------------
  app.get('/inspector', (c) => c.redirect('/inspector/', 302));
  app.get('/inspector/*', (c) => {
    if (assets === undefined) return c.json({ error: 'the inspector page is not built: run npm run build in the awaken-ts package', code: 'inspector_not_built' }, 503);
    // Decoded once, from the path as sent: a sequence that is not UTF-8 (`%`, `%zz`, `%c0%ae`) is the client's mistake.
    let rel: string;
    try {
      rel = decodeURIComponent(new URL(c.req.url).pathname.slice('/inspector/'.length)) || 'index.html';
    } catch {
      return c.json({ error: 'the path is not valid percent-encoded UTF-8', code: 'invalid_path', field: 'path' }, 400);
    }
    const root = resolve(assets);
    const file = normalize(join(root, rel));
    if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) return c.json({ error: `no such file: ${rel}`, code: 'not_found' }, 404);
    return c.body(readFileSync(file), 200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', ...PAGE_HEADERS });
  });

  // ---- its API ----------------------------------------------------------------------------------
  app.get('/v1/inspector/transcripts', async (c) => {
    const thread = c.req.query('thread_id');
    return c.json({ recording: options.recordDir !== undefined, items: await transcripts(thread === undefined || thread === '' ? undefined : thread) });
  });

  app.get('/v1/inspector/transcripts/:name', async (c) => c.body(await transcriptText(c.req.param('name')), 200, { 'content-type': 'application/x-ndjson; charset=utf-8' }));

  /**
   * Replays a transcript in the server — one sent in the body (up to the body limit) or a recorded
   * one by name — and returns the report, with the recorded line where the replay left the recording.
   */
  app.post('/v1/inspector/replay', async (c) => {
    const body = await bodyOf(c, ReplayBodySchema);
    const text = body.name !== undefined ? await transcriptText(body.name) : (body.transcript as string);
    const { end: _end, ...report } = await replayTranscript(text);
    const line = report.at?.line;
    return c.json({ report, ...(line !== undefined ? { recorded_line: text.split('\n')[line - 1] ?? '' } : {}) });
  });

  return app;
}
