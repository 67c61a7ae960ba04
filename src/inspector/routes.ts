import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { Hono } from 'hono';
import { z } from 'zod';
import { replayTranscript } from '../replay/replayer.ts';
import { TRANSCRIPT_FILE_NAME } from '../replay/served.ts';
import type { Store } from '../runtime/store.ts';
import { bodyOf, HttpError } from '../server/http-support.ts';
import { mayReach } from '../server/principal.ts';

/**
 * The run inspector (docs/inspector.md, ADR 0033): the page at `/inspector` (static files built with
 * the package, no CDN), and the API it reads besides the server's own routes — the transcripts
 * `awaken serve --record DIR` wrote, and a replay of a transcript in the server. Behind the same
 * access control as the API: the page is public, like a login page; every `/v1/inspector` route
 * needs a credential when tokens are configured, and a transcript is listed and served only to a
 * caller who may read its thread.
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

const ReplayBodySchema = z
  .object({ transcript: z.string().min(1).optional(), name: z.string().regex(TRANSCRIPT_FILE_NAME).optional() })
  .strict()
  .refine((b) => (b.transcript === undefined) !== (b.name === undefined), { message: 'give a transcript or the name of a recorded one, not both', path: ['transcript'] });

export function inspectorRoutes(options: InspectorOptions): Hono {
  const app = new Hono();
  const assets = options.assetsDir ?? defaultAssetsDir();

  /** The transcripts of the record directory the caller may read, newest first. */
  const transcripts = async (threadId?: string): Promise<TranscriptEntry[]> => {
    const dir = options.recordDir;
    if (dir === undefined || !existsSync(dir)) return [];
    const out: TranscriptEntry[] = [];
    // One ownership check per thread, however many of its runs were recorded.
    const readable = new Map<string, boolean>();
    for (const name of readdirSync(dir)) {
      const m = TRANSCRIPT_FILE_NAME.exec(name);
      if (m === null) continue;
      const [, thread, run] = m as unknown as [string, string, string];
      if (threadId !== undefined && thread !== threadId) continue;
      if (!readable.has(thread)) readable.set(thread, await mayReach(options.store, thread, 'read'));
      if (readable.get(thread) !== true) continue;
      const stat = statSync(join(dir, name));
      out.push({ name, thread_id: thread, run_id: run, bytes: stat.size, modified_at: Math.floor(stat.mtimeMs) });
    }
    return out.sort((a, b) => b.modified_at - a.modified_at || (a.name < b.name ? -1 : 1));
  };

  /** A recorded transcript's text, when it exists and the caller may read its thread. */
  const transcriptText = async (name: string): Promise<string> => {
    const m = TRANSCRIPT_FILE_NAME.exec(name);
    const dir = options.recordDir;
    if (m === null || dir === undefined) throw new HttpError(404, 'transcript_not_found', `no recorded transcript ${name}`);
    const path = join(dir, name);
    if (!existsSync(path) || !(await mayReach(options.store, m[1] as string, 'read'))) throw new HttpError(404, 'transcript_not_found', `no recorded transcript ${name}`);
    return readFileSync(path, 'utf8');
  };

  // ---- the page ---------------------------------------------------------------------------------
  app.get('/inspector', (c) => c.redirect('/inspector/', 302));
  app.get('/inspector/*', (c) => {
    if (assets === undefined) return c.json({ error: 'the inspector page is not built: run npm run build in the awaken-ts package', code: 'inspector_not_built' }, 503);
    const rel = decodeURIComponent(c.req.path.slice('/inspector/'.length)) || 'index.html';
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
