import { existsSync, lstatSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { JsonValueSchema } from '../contract/json.ts';
import { unreachable } from '../contract/never.ts';
import { ScriptedLlm, ScriptStepSchema } from '../providers/scripted.ts';
import { forkTranscript, type ForkErrorCode } from '../replay/fork.ts';
import { forkView } from '../replay/fork-view.ts';
import { replayTranscript } from '../replay/replayer.ts';
import { RunStatusSchema, type RunStatus } from '../contract/lifecycle.ts';
import { foldCase, type Store } from '../runtime/store.ts';
import { bodyOf, HttpError } from '../server/http-support.ts';
import { currentPrincipal, mayReach } from '../server/principal.ts';
import { findThreads } from './threads.ts';
import { metaOf, TranscriptIndex, type IndexedTranscript, type TranscriptMeta } from './transcript-index.ts';

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
  /** The path the API is mounted at (`/api/awaken`; default: the root): the page calls the API under it. */
  readonly basePath?: string;
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

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

/** The page's own files only, from its own origin: nothing to load from elsewhere, nothing inline. */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** The page's meta tag, read by the page, that names the path the API is under (`''`: the root). */
export const BASE_META = 'awaken-base-path';

/**
 * The page's HTML with the API's mount path in a meta tag after its charset: a value the page reads,
 * not a script, so the policy stays as strict. The path is checked where it is configured; it is
 * escaped here all the same.
 */
export function withBasePath(html: string, basePath: string): string {
  const escaped = basePath.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const tag = `<meta name="${BASE_META}" content="${escaped}" />`;
  // After the charset (which must come first), else the head's opening, else the doctype.
  const at = /<meta charset[^>]*>/i.exec(html) ?? /<head[^>]*>/i.exec(html) ?? /<!doctype[^>]*>/i.exec(html);
  const end = at === null ? 0 : at.index + at[0].length;
  return `${html.slice(0, end)}${tag}${html.slice(end)}`;
}

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
  .refine((b) => (b.transcript === undefined) !== (b.name === undefined), {
    message: 'give a transcript or the name of a recorded one, not both',
    path: ['transcript'],
  });

/** A fork of a recorded transcript: the step, JSON Pointer edits, and a scripted model for what the recording cannot answer. */
const ForkBodySchema = z
  .object({
    name: z.string().regex(FILE_NAME),
    at_step: z.number().int().min(1),
    edits: z
      .array(z.object({ path: z.string().min(1), value: JsonValueSchema }).strict())
      .max(100)
      .default([]),
    // A model that waits would hold the server for as long as it is told to: a fork's steps answer at once.
    model: z
      .array(
        ScriptStepSchema.refine((step) => step.delay_ms === undefined, { message: 'a fork’s scripted model answers at once: no delay_ms', path: ['delay_ms'] }),
      )
      .max(1_000)
      .optional(),
  })
  .strict();

/** The field of a fork's request that a fork error is about, and its status: what was asked (400) or what the run is (422). */
function forkError(code: ForkErrorCode, message: string): HttpError {
  switch (code) {
    case 'step_past_end':
      return new HttpError(400, code, message, 'at_step');
    case 'no_such_field':
    case 'invalid_edit':
      return new HttpError(400, code, message, 'edits');
    case 'model_required':
    case 'tool_required':
      return new HttpError(400, code, message, 'model');
    case 'unreadable':
    case 'cannot_run':
    case 'prefix_diverges':
      return new HttpError(422, code, message, 'name');
    default:
      return unreachable(code, 'fork error');
  }
}

/** An integer query parameter, clamped to its range, as the API's other lists read theirs; not an integer: 400 naming it. */
function intParam(c: Context, name: string, fallback: number, min: number, max: number): number {
  const raw = c.req.query(name);
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d{1,15}$/.test(raw)) throw new HttpError(400, 'invalid_query', `${name} must be an integer`, name);
  return Math.min(max, Math.max(min, Number(raw)));
}

/** The longest search text or agent id a query may give (an id is at most 200 characters: ID_PATTERN). */
const MAX_TEXT = 200;

/** A text query parameter: absent or empty, none; longer than MAX_TEXT, 400 naming it. */
function textParam(c: Context, name: string): string | undefined {
  const raw = c.req.query(name);
  if (raw === undefined || raw === '') return undefined;
  if (raw.length > MAX_TEXT) throw new HttpError(400, 'invalid_query', `${name} must be at most ${MAX_TEXT} characters`, name);
  return raw;
}

/** A text's lines, split as they are read: the header is in the first few of a transcript of megabytes. */
function* linesOf(text: string): Generator<string> {
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n', start);
    if (end < 0) {
      yield text.slice(start);
      return;
    }
    yield text.slice(start, end);
    start = end + 1;
  }
}

export function inspectorRoutes(options: InspectorOptions): Hono {
  const app = new Hono();
  const assets = options.assetsDir ?? defaultAssetsDir();
  const index = options.recordDir !== undefined ? new TranscriptIndex(options.recordDir) : undefined;
  /** Each indexed transcript as the API lists it (no owner), made once while its file is unchanged. */
  const entries = new WeakMap<IndexedTranscript, TranscriptEntry>();

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
    // One ownership check per thread, however many of its runs were recorded; none without a principal.
    const threads = new Map<string, boolean>();
    const everyone = currentPrincipal() === undefined;
    for (const t of index.list()) {
      if (threadId !== undefined && t.thread_id !== threadId) continue;
      if (!everyone && !(await readable(t, threads))) continue;
      let entry = entries.get(t);
      if (entry === undefined)
        entries.set(t, (entry = { name: t.name, thread_id: t.thread_id, run_id: t.run_id, segment: t.segment, bytes: t.bytes, modified_at: t.modified_at }));
      out.push(entry);
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
    const meta = metaOf(linesOf(text));
    if (meta === undefined || !(await readable(meta))) throw missing;
    return text;
  };

  // ---- the page ---------------------------------------------------------------------------------
  const basePath = options.basePath ?? '';
  app.get('/inspector', (c) => c.redirect(`${basePath}/inspector/`, 302));
  app.get('/inspector/*', (c) => {
    if (assets === undefined)
      return c.json({ error: 'the inspector page is not built: run npm run build in the awaken-ts package', code: 'inspector_not_built' }, 503);
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
    const type = TYPES[extname(file)] ?? 'application/octet-stream';
    if (extname(file) === '.html') return c.body(withBasePath(readFileSync(file, 'utf8'), basePath), 200, { 'content-type': type, ...PAGE_HEADERS });
    return c.body(readFileSync(file), 200, { 'content-type': type, ...PAGE_HEADERS });
  });

  // ---- its API ----------------------------------------------------------------------------------
  /**
   * The recorded transcripts the caller may read, newest first: of one thread (`thread_id`), whose
   * name, thread or run id holds `q` (any case), paged by `offset` and `limit` — without `limit`, all
   * of them from `offset`.
   */
  app.get('/v1/inspector/transcripts', async (c) => {
    const thread = c.req.query('thread_id');
    const text = textParam(c, 'q');
    const offset = intParam(c, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = c.req.query('limit') === undefined || c.req.query('limit') === '' ? undefined : intParam(c, 'limit', 50, 1, 200);
    let all = await transcripts(thread === undefined || thread === '' ? undefined : thread);
    if (text !== undefined) {
      const folded = foldCase(text);
      all = all.filter((t) => foldCase(t.name).includes(folded) || foldCase(t.thread_id).includes(folded) || foldCase(t.run_id).includes(folded));
    }
    const items = limit === undefined ? all.slice(offset) : all.slice(offset, offset + limit);
    return c.json({
      recording: options.recordDir !== undefined,
      items,
      total: all.length,
      offset,
      ...(limit !== undefined ? { limit } : {}),
      has_more: offset + items.length < all.length,
    });
  });

  /**
   * The threads the caller may read — the store's and those only recorded transcripts know — newest
   * first, with their run counts, recorded transcripts and newest run; searched by `q` (a substring
   * of the id, title or a run id, any case), narrowed to threads with a run of `agent_id`, in
   * `status`, or ended in error (`errors=true`), and paged.
   */
  app.get('/v1/inspector/threads', async (c) => {
    const text = textParam(c, 'q');
    const agentId = textParam(c, 'agent_id');
    const statusRaw = c.req.query('status');
    let status: RunStatus | undefined;
    if (statusRaw !== undefined && statusRaw !== '') {
      const parsed = RunStatusSchema.safeParse(statusRaw);
      if (!parsed.success) throw new HttpError(400, 'invalid_query', `status must be one of ${RunStatusSchema.options.join(', ')}`, 'status');
      status = parsed.data;
    }
    const errorsRaw = c.req.query('errors');
    if (errorsRaw !== undefined && errorsRaw !== '' && errorsRaw !== 'true' && errorsRaw !== 'false')
      throw new HttpError(400, 'invalid_query', 'errors must be true or false', 'errors');
    const offset = intParam(c, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = intParam(c, 'limit', 50, 1, 200);
    const run = {
      ...(agentId !== undefined ? { agentId } : {}),
      ...(status !== undefined ? { status } : {}),
      ...(errorsRaw === 'true' ? { failed: true } : {}),
    };
    const page = await findThreads(options.store, currentPrincipal(), await transcripts(), { ...(text !== undefined ? { text } : {}), run, offset, limit });
    return c.json({ items: page.items, total: page.total, offset, limit, has_more: offset + page.items.length < page.total });
  });

  app.get('/v1/inspector/transcripts/:name', async (c) =>
    c.body(await transcriptText(c.req.param('name')), 200, { 'content-type': 'application/x-ndjson; charset=utf-8' }),
  );

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

  /**
   * Forks a recorded transcript at a step (`forkTranscript`): replayed to the step's end as recorded,
   * the edits applied, and gone on, answered by the recording while asked the same and from the first
   * request that differs by `model`'s steps. The child comes back with the two runs side by side from
   * the fork point; it is not stored.
   */
  app.post('/v1/inspector/fork', async (c) => {
    const body = await bodyOf(c, ForkBodySchema);
    const text = await transcriptText(body.name);
    const forked = await forkTranscript(text, {
      atStep: body.at_step,
      edits: body.edits,
      parentName: body.name,
      ...(body.model !== undefined ? { model: new ScriptedLlm(body.model) } : {}),
    });
    if (!forked.ok) throw forkError(forked.error.code, forked.error.message);
    return c.json({ transcript: forked.transcript, inferences: forked.inferences, view: forkView(text, forked.transcript, body.at_step) });
  });

  return app;
}
