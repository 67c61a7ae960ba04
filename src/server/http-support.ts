import type { Context } from 'hono';
import { timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import { fieldIssues } from '../contract/issue-line.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import type { Store } from '../runtime/store.ts';
import type { Mailbox } from './mailbox.ts';
import type { LogItem, RegistryError, RunRegistry } from './run-registry.ts';
import { unreachable } from '../contract/never.ts';

export interface ServerParts {
  readonly runtime: AgentRuntime;
  readonly store: Store;
  readonly registry: RunRegistry;
  /** Background submissions (`/v1/threads/:id/messages`, `/v1/threads/:id/mailbox`); absent: those routes answer 404. */
  readonly mailbox?: Mailbox;
}

/** A client mistake: a 4xx with `{error, code}` (and the field when one is to blame). */
export class HttpError extends Error {
  readonly status: 400 | 401 | 404 | 409 | 413 | 415 | 422 | 503;
  readonly code: string;
  readonly field?: string;
  readonly extra?: Record<string, unknown>;
  constructor(status: HttpError['status'], code: string, message: string, field?: string, extra?: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    if (field !== undefined) this.field = field;
    if (extra !== undefined) this.extra = extra;
  }
}

/**
 * How deep the arrays and objects of a JSON body may nest. Everything that reads a body — schemas,
 * encoders, stores, transcripts — walks it recursively, so a body nested thousands deep would
 * overflow the stack wherever it is first walked; it is refused before it is parsed. serde_json,
 * the Rust original's parser, has the same recursion limit.
 */
export const MAX_JSON_DEPTH = 128;

/** Whether a JSON text opens more than `max` arrays and objects one inside another (strings skipped). */
export function nestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return true;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return false;
}

/**
 * A request's body as JSON — the one reader of every JSON body the server takes: a body nested
 * deeper than `MAX_JSON_DEPTH` is a 400 `json_too_deep`, malformed JSON a 400 `invalid_json`. A body
 * its client stopped sending is not malformed: that error goes on as it is (see `clientClosed`).
 */
export async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (nestsDeeper(text, MAX_JSON_DEPTH)) throw new HttpError(400, 'json_too_deep', `the JSON body nests deeper than ${MAX_JSON_DEPTH} levels`, '(body)');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new HttpError(400, 'invalid_json', `malformed JSON: ${(e as Error).message}`, '(body)');
  }
}

/**
 * Whether `e` is the request's client going away — its connection closed before the body was all
 * there — rather than a failure of the server: such a request is answered (to nobody) and logged
 * as 499, the status proxies use for it.
 */
export function clientClosed(c: Context, e: unknown): boolean {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  return (code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE') && c.req.raw.signal.aborted;
}

/** Parses a JSON body with a schema; malformed or too deep JSON and schema violations are 400s naming the field. */
export async function bodyOf<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/(.+\+)?json\b/i.test(type)) throw new HttpError(415, 'unsupported_media_type', 'the body must be application/json');
  const raw = await readJson(c);
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    // A key the schema does not know is named as a field of its own ("unknown field").
    const [first] = fieldIssues(parsed.error).map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
    const field = first?.path === '' ? '(body)' : (first?.path ?? '(body)');
    throw new HttpError(400, 'invalid_request', `${field}: ${first?.message ?? 'invalid'}`, field);
  }
  return parsed.data;
}

export const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' } as const;

/**
 * The last frame of a thread stream the server ends on its own (a client too far behind, a
 * shutdown): a resync without messages, `{seq, reconnect: true, reason}` — reconnect from `seq`.
 */
const reconnectFrame = (seq: number, reason: 'slow_client' | 'shutting_down'): string =>
  `event: resync\nid: ${seq}\ndata: ${JSON.stringify({ seq, reconnect: true, reason })}\n\n`;

/** The SSE text of one log item: `id: <seq>` on every frame; a resync frame is `event: resync`. */
export function sseOf(item: LogItem): string {
  if (item.kind === 'frame') return `id: ${item.seq}\ndata: ${item.data}\n\n`;
  return `event: resync\nid: ${item.seq}\ndata: ${JSON.stringify({ seq: item.seq, messages: item.messages })}\n\n`;
}

/** Counted per queued piece besides its bytes, so many tiny frames are bounded too. */
const PIECE_OVERHEAD = 256;
/** Bytes encoded ahead of the socket; the rest waits as text until the client reads. */
const QUEUE_BYTES = 64 * 1024;
/** What a piece of text counts for against a client's bound: its UTF-8 bytes and the overhead. */
const pieceBytes = (text: string): number => Buffer.byteLength(text) + PIECE_OVERHEAD;

export interface LogStreamOptions {
  readonly heartbeatMs: number;
  readonly until?: (item: LogItem) => boolean;
  /** The protocol's framing of an item (default: `sseOf`). */
  readonly render?: (item: LogItem) => string;
  readonly prologue?: string;
  readonly epilogue?: () => string;
  /**
   * What the item `until` ends on is written as, once known: its rendered text, given before any
   * later item, and answered when the server has read what it needs (a protocol closing its run
   * with the thread as stored). Heartbeats go on meanwhile; a failure writes the text as it was.
   */
  readonly lastFrame?: (text: string) => Promise<string>;
  /** The stream ends once it has sent the frame with this sequence number (at once when `since` is at or past it), after the epilogue. */
  readonly endAt?: Promise<number>;
}

/**
 * An SSE response over a thread's log from `since`: frames (and resyncs) as they come, a heartbeat
 * comment while idle, and the end when `until` says so. Closing the response only unsubscribes.
 *
 * Memory per client is bounded: the response is written only as fast as the socket drains, and a
 * client that leaves more than the registry's `maxFollowerBytes` unread for longer than its
 * `followerGraceMs` (a burst drains in a moment; a client that stopped reading does not), or four
 * times that much at any moment, is dropped (and logged) — a thread stream ends with an
 * `event: resync` frame without messages, `{seq, reconnect: true}` (reconnect with that id: the rest
 * follows exactly, or a full resync), and closes; a protocol
 * stream (its own framing, no resync frame) is aborted, which its client sees as a dropped
 * connection to resume from.
 */
export function logStream(
  registry: RunRegistry,
  threadId: string,
  since: number | undefined,
  options: LogStreamOptions,
  headers: Record<string, string> = SSE_HEADERS,
): Response {
  const encoder = new TextEncoder();
  const maxBytes = Math.max(1, registry.maxFollowerBytes);
  let unsubscribe: (() => void) | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  let stop = (): void => {
    closed = true;
    unsubscribe?.();
    if (timer !== undefined) clearInterval(timer);
  };
  /**
   * Text not yet handed to the response: encoded only as the socket drains, so a client that does not
   * read costs references to frames (shared with the ring and the other followers), not copies.
   */
  const pending: string[] = [];
  let pendingBytes = 0;
  /** Whether the stream ends once `pending` is out. */
  let ending = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const queued = (): number => pendingBytes + (QUEUE_BYTES - (controller.desiredSize ?? 0));
  const flush = (): void => {
    try {
      while (pending.length > 0 && (controller.desiredSize ?? 0) > 0) {
        const text = pending.shift() as string;
        pendingBytes -= pieceBytes(text);
        controller.enqueue(encoder.encode(text));
      }
      if (ending && pending.length === 0) controller.close();
    } catch {
      // closed by the client meanwhile
      pending.length = 0;
      pendingBytes = 0;
      stop();
    }
  };
  const push = (text: string): void => {
    pending.push(text);
    pendingBytes += pieceBytes(text);
    flush();
  };
  const end = (): void => {
    ending = true;
    flush();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      async start(c) {
        controller = c;
        let idle = true;
        /** Since when more than `maxBytes` have waited unread (undefined: not now). */
        let overSince: number | undefined;
        /** The last frame's sequence number written to this client. */
        let lastSent = since ?? 0;
        const overflow = (): void => {
          const unread = queued();
          stop();
          try {
            registry.followerDropped({ thread: threadId, queuedBytes: unread });
          } catch {
            // the stream ends below whatever the log does
          }
          if (options.render !== undefined) {
            // Aborted as a connection the client closed (the node adapter then resets it without a stack trace).
            pending.length = 0;
            pendingBytes = 0;
            controller.error(Object.assign(new Error(`the client left ${unread} bytes unread`), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
            return;
          }
          // A last, small frame after everything queued (never the thread's history, which a client
          // that does not read would make the server hold): read in order, it says to reconnect from
          // the last frame sent, which resumes exactly or resyncs.
          push(reconnectFrame(lastSent, 'slow_client'));
          end();
        };
        // A burst (a large tool result, a fast model) drains in a moment; a client that does not read
        // stays behind: dropped once the grace time has passed, or at once past four times the bound.
        const checkBehind = (): void => {
          if (closed) return;
          const unread = queued();
          if (unread <= maxBytes) {
            overSince = undefined;
            return;
          }
          if (unread > 4 * maxBytes) {
            overflow();
            return;
          }
          if (overSince === undefined) {
            overSince = registry.now();
            // Looked at again when the grace is over, whether or not more is written meanwhile.
            setTimeout(checkBehind, registry.followerGraceMs + 1).unref?.();
            return;
          }
          if (registry.now() - overSince >= registry.followerGraceMs) overflow();
        };
        const write = (text: string): void => {
          if (closed) return;
          idle = false;
          push(text);
          checkBehind();
        };
        if (options.prologue !== undefined) write(options.prologue);
        timer = setInterval(() => {
          if (idle) write(': heartbeat\n\n');
          idle = true;
        }, options.heartbeatMs);
        /** Where `endAt` ends the stream (undefined: not known yet, or never). */
        let endSeq: number | undefined;
        const endIfReached = (): void => {
          if (closed || closing || endSeq === undefined || lastSent < endSeq) return;
          if (options.epilogue !== undefined) write(options.epilogue());
          stop();
          end();
        };
        /** Whether the last item came and its text is being made: later items are not written. */
        let closing = false;
        /** The last item's text as rendered, while its final form is being made. */
        let lastText = '';
        // The last piece is written whatever the client's backlog (a snapshot of a long thread is one
        // large piece): the stream ends with it, so it holds nothing longer than the client takes.
        const finishWith = (text: string): void => {
          if (closed) return;
          push(text);
          if (options.epilogue !== undefined) push(options.epilogue());
          stop();
          end();
        };
        const offShutdown = registry.onShutdown(() => {
          if (closed) return;
          // A run's last frame already came: it is written as it was, not lost to the shutdown.
          if (closing) return finishWith(lastText);
          if (options.render === undefined) push(reconnectFrame(lastSent, 'shutting_down'));
          stop();
          end();
        });
        const offForgotten = registry.onForgotten(threadId, () => {
          if (closed) return;
          if (closing) return finishWith(lastText);
          stop();
          end();
        });
        const stopStream = stop;
        stop = (): void => {
          offShutdown();
          offForgotten();
          stopStream();
        };
        unsubscribe = await registry.subscribe(
          threadId,
          since,
          (item) => {
            if (closed || closing) return;
            lastSent = item.seq;
            const text = (options.render ?? sseOf)(item);
            const last = options.until?.(item) === true;
            if (last && options.lastFrame !== undefined) {
              // Nothing after the last item is written; heartbeats keep the connection meanwhile.
              closing = true;
              lastText = text;
              void options.lastFrame(text).then(
                (framed) => finishWith(framed),
                () => finishWith(text),
              );
              return;
            }
            write(text);
            if (!closed && last) {
              if (options.epilogue !== undefined) write(options.epilogue());
              stop();
              end();
            }
            endIfReached();
          },
          options.until !== undefined ? { scope: 'run' } : {},
        );
        if (closed) unsubscribe();
        void options.endAt?.then(
          (seq) => {
            endSeq = seq;
            endIfReached();
          },
          // Where the thread stands could not be read: the stream ends with what it sent.
          () => {
            endSeq = lastSent;
            endIfReached();
          },
        );
      },
      pull() {
        flush();
      },
      cancel() {
        pending.length = 0;
        pendingBytes = 0;
        stop();
      },
    },
    { highWaterMark: QUEUE_BYTES, size: (chunk) => chunk.byteLength + PIECE_OVERHEAD },
  );
  return new Response(body, { status: 200, headers });
}

export function registryError(e: RegistryError): HttpError {
  switch (e.code) {
    case 'thread_busy':
    case 'thread_paused':
      return new HttpError(409, e.code, e.message, undefined, { run_id: e.runId });
    case 'run_not_found':
    case 'thread_not_found':
    case 'target_not_found':
      return new HttpError(404, e.code, e.message);
    case 'not_waiting':
      return new HttpError(409, e.code, e.message);
    case 'start_failed':
      return new HttpError(400, e.code, e.message);
    case 'shutting_down':
      return new HttpError(503, e.code, e.message);
    default:
      return unreachable(e);
  }
}

/** A host name, IPv4 or bracketed IPv6 address, with an optional port: all a forwarded host may be. */
const HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * Where clients reach this server (the A2A agent card's address): `http://` and the `Host` the
 * request names; behind a proxy the operator trusts (`trustProxy`), the first `X-Forwarded-Proto`
 * (`http` or `https`) and `X-Forwarded-Host` instead. Trusted from anyone, those headers would let
 * any client make the public card advertise a host of its choosing.
 */
export function publicOrigin(c: Context, trustProxy: boolean): string {
  const host = c.req.header('host') ?? 'localhost';
  if (!trustProxy) return `http://${host}`;
  const first = (name: string): string | undefined => c.req.header(name)?.split(',')[0]?.trim();
  const proto = first('x-forwarded-proto')?.toLowerCase();
  const forwardedHost = first('x-forwarded-host');
  return `${proto === 'https' || proto === 'http' ? proto : 'http'}://${forwardedHost !== undefined && HOST.test(forwardedHost) ? forwardedHost : host}`;
}

/** The token of `Authorization: Bearer <token>`, or `undefined`. */
export function bearerOf(c: Context): string | undefined {
  return /^bearer\s+(.+)$/i.exec((c.req.header('authorization') ?? '').trim())?.[1];
}

/** Whether two secrets are equal, compared in constant time. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The bearer token a request presents (`Authorization: Bearer <token>`) against the one expected:
 * `missing` without one, `wrong` when it differs (compared in constant time), else `ok`.
 */
export function bearerCheck(c: Context, expected: string): 'missing' | 'wrong' | 'ok' {
  const given = bearerOf(c);
  if (given === undefined) return 'missing';
  return sameSecret(given, expected) ? 'ok' : 'wrong';
}
