/**
 * What a judge found, and where: the vocabulary every protocol's judge reports in, so that a
 * capture's verdict is one table of checks with the frame number and a quote of each offending
 * frame (`awaken judge`). Frames are numbered from 1 within a turn (one response body): an SSE body's
 * blank-line-separated frames, an NDJSON body's lines.
 */

/** The checks of a verdict, in the order the table shows them. */
export const CHECKS = ['schema', 'ordering', 'closure', 'terminal', 'client', 'multi-turn'] as const;
export type CheckName = (typeof CHECKS)[number];

/** What each check asks, as the table explains it. */
export const CHECK_TITLES: Readonly<Record<CheckName, string>> = {
  schema: "every frame parses and the protocol's official schema or codec accepts it",
  ordering: 'every frame comes where the protocol allows it (no delta or end for a block never started, no frame after the end)',
  closure: 'every block opened (text, reasoning, tool call, artifact) is closed before the stream finishes',
  terminal: 'exactly one terminal frame per run, and the body ends the way the protocol ends it',
  client: "the protocol's official client reads the body without an error, a repair or a warning",
  'multi-turn': 'the turns of one conversation agree: a tool call keeps its name and its conversation',
};

export interface Frame {
  /** 1-based within its turn. */
  readonly n: number;
  readonly text: string;
}

export interface Finding {
  readonly check: CheckName;
  /** 1-based: the response body of the conversation it was found in. */
  readonly turn: number;
  /** The frame it names, when one frame is at fault. */
  readonly frame?: number;
  /** The start of that frame, as it was sent. */
  readonly quote?: string;
  readonly message: string;
}

const QUOTE = 160;

/** The start of a frame, on one line. */
export function quoteOf(text: string): string {
  const one = text.replace(/\r/g, '\\r').replace(/\n/g, '\\n');
  return one.length > QUOTE ? `${one.slice(0, QUOTE)}…` : one;
}

/** A finding about one frame (or about the whole body, without one). */
export function finding(check: CheckName, message: string, frame?: Frame, turn = 1): Finding {
  return frame === undefined ? { check, turn, message } : { check, turn, frame: frame.n, quote: quoteOf(frame.text), message };
}

/** One line: `frame N: message`, or the message alone. */
export function describeFinding(f: Finding): string {
  return f.frame === undefined ? f.message : `frame ${f.frame}: ${f.message}`;
}

/** The frames of an SSE body: separated by a blank line (LF or CRLF), empty ones dropped. */
export function sseFrames(body: string): Frame[] {
  return body
    .split(/\r?\n\r?\n/)
    .filter((t) => t.trim() !== '')
    .map((text, i) => ({ n: i + 1, text }));
}

/** The frames of an NDJSON body: its non-empty lines. */
export function ndjsonFrames(body: string): Frame[] {
  return body
    .split('\n')
    .filter((t) => t.trim() !== '')
    .map((text, i) => ({ n: i + 1, text }));
}

/**
 * The JSON an SSE frame carries: the `data:` lines joined (comment lines and `event:`/`id:` fields
 * ignored), or why there is none.
 */
export function sseData(frame: Frame): { readonly data: string } | { readonly problem: string } {
  const data: string[] = [];
  for (const line of frame.text.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':') || line.startsWith('event:') || line.startsWith('id:') || line.startsWith('retry:')) continue;
    if (!line.startsWith('data:')) return { problem: `not an SSE field: ${quoteOf(line)}` };
    data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  if (data.length === 0) return { problem: 'a frame without data' };
  return { data: data.join('\n') };
}

/** The JSON value an SSE frame carries, or the `schema` finding that says why it has none. */
export function sseJson(frame: Frame): { readonly value: unknown } | { readonly finding: Finding } {
  const data = sseData(frame);
  if ('problem' in data) return { finding: finding('schema', data.problem, frame) };
  try {
    return { value: JSON.parse(data.data) as unknown };
  } catch (e) {
    return { finding: finding('schema', `not JSON (${e instanceof Error ? e.message : String(e)})`, frame) };
  }
}

/** A tool call named in a turn: where the conversation's turns are compared (`multi-turn`). */
export interface ToolMention {
  readonly id: string;
  readonly name: string;
  readonly frame: Frame;
}

/**
 * The `multi-turn` check over the turns of one conversation: a tool call announced again in a later
 * turn (a resumed call) keeps the name it had.
 */
export function multiTurnFindings(turns: readonly (readonly ToolMention[])[]): Finding[] {
  const named = new Map<string, { readonly name: string; readonly turn: number }>();
  const out: Finding[] = [];
  turns.forEach((mentions, i) => {
    for (const m of mentions) {
      const before = named.get(m.id);
      if (before === undefined) named.set(m.id, { name: m.name, turn: i + 1 });
      else if (before.name !== m.name && before.turn !== i + 1)
        out.push(finding('multi-turn', `tool call ${m.id} is ${m.name} here but was ${before.name} in turn ${before.turn}`, m.frame, i + 1));
    }
  });
  return out;
}

/** The verdict of a capture, check by check: what `awaken judge` prints. */
export interface JudgeReport {
  readonly protocol: string;
  readonly passed: boolean;
  /** Frames per turn. */
  readonly turns: readonly number[];
  readonly checks: readonly { readonly check: CheckName; readonly passed: boolean; readonly findings: readonly Finding[] }[];
  /** What the reader should know about the run of the command itself (an answer that went unused); never a fault of the server. */
  readonly notes?: readonly string[];
}

export function reportOf(protocol: string, turns: readonly number[], findings: readonly Finding[], notes: readonly string[] = []): JudgeReport {
  const checks = CHECKS.map((check) => {
    const mine = findings.filter((f) => f.check === check);
    return { check, passed: mine.length === 0, findings: mine };
  });
  return { protocol, passed: findings.length === 0, turns, checks, ...(notes.length > 0 ? { notes } : {}) };
}

/** The report as a table: one row per check, then each finding with its turn, frame and quote. */
export function renderReport(r: JudgeReport): string {
  const many = r.turns.length > 1;
  const lines = [`${r.protocol}: ${r.turns.length} turn${many ? 's' : ''}, ${r.turns.reduce((a, b) => a + b, 0)} frames — ${r.passed ? 'PASS' : 'FAIL'}`, ''];
  lines.push('check        result  findings');
  for (const c of r.checks)
    lines.push(`${c.check.padEnd(11)}  ${(c.passed ? 'pass' : 'FAIL').padEnd(6)}  ${String(c.findings.length).padStart(8)}   ${CHECK_TITLES[c.check]}`);
  for (const c of r.checks) {
    for (const f of c.findings) {
      const where = [many ? `turn ${f.turn}` : undefined, f.frame !== undefined ? `frame ${f.frame}` : 'body'].filter((x) => x !== undefined).join(' ');
      lines.push('', `${c.check} · ${where}: ${f.message}`);
      if (f.quote !== undefined) lines.push(`  > ${f.quote}`);
    }
  }
  for (const note of r.notes ?? []) lines.push('', `note: ${note}`);
  return `${lines.join('\n')}\n`;
}

/**
 * A conversation to drive against a live server with the protocol's official client: a user
 * message, the first approval answered (when `decision` says how), then an optional second message.
 */
export interface Scenario {
  /** The protocol's endpoint (A2A: the agent's base URL, where its card is). */
  readonly url: string;
  readonly message: string;
  readonly decision?: 'approve' | 'deny';
  readonly then?: string;
  /** Sent with every request (an `authorization` header, for one). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** What a drive recorded: each response body as it came off the wire, and each turn's request id (JSON-RPC). */
export interface Capture {
  readonly bodies: readonly string[];
  readonly requestIds?: readonly (number | string)[];
  /** Whether the server asked for an approval in the conversation (a drive says; a capture read from files cannot). */
  readonly asked?: boolean;
}

/** A drive that could not hold the conversation: the server refused a request, or answered no stream. */
export class DriveFailure extends Error {}

/** A server that does not answer at all (refused, unknown host, reset). */
export class Unreachable extends DriveFailure {}

/**
 * What a schema found wrong, on one line (a schema's error is often a JSON dump of every issue): the
 * first issue's path and message, and how many more there are. Reads the issues of any zod version,
 * through a wrapper's `cause` (the AI SDK's validation error).
 */
export function schemaProblem(error: unknown): string {
  for (let x: unknown = error, depth = 0; typeof x === 'object' && x !== null && depth < 3; x = (x as { cause?: unknown }).cause, depth++) {
    const issues = (x as { issues?: unknown }).issues;
    if (!Array.isArray(issues) || issues.length === 0) continue;
    type Issue = { code?: unknown; path?: readonly unknown[]; message?: unknown; keys?: readonly unknown[]; errors?: readonly (readonly Issue[])[] };
    let first = issues[0] as Issue;
    // A union of tagged shapes (chunk types, event types): the branch whose tag matched says what is wrong.
    const branch =
      first.code === 'invalid_union'
        ? first.errors?.find((b) => b.length > 0 && b.every((i) => !(i.code === 'invalid_value' && i.path?.[0] === 'type')))
        : undefined;
    if (branch !== undefined) first = { ...(branch[0] as Issue), path: [...(first.path ?? []), ...((branch[0] as Issue).path ?? [])] };
    const path = [...(first.path ?? []), ...(Array.isArray(first.keys) && first.keys.length > 0 ? [first.keys[0]] : [])].map(String).join('.');
    const message = Array.isArray(first.keys) && first.keys.length > 0 ? 'unknown field' : String(first.message);
    return `${path === '' ? message : `${path}: ${message}`}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`;
  }
  return quoteOf((error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '');
}

/**
 * An error a library threw, on one line: the first line of its message, and what its schema found
 * (`schemaProblem`) when a schema threw it (the rest of such a message is a JSON dump of the issues).
 */
export function errorLine(e: unknown): string {
  const head = ((e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '').replace(/[\s:[{]+$/, '');
  let issues = false;
  for (let x: unknown = e, depth = 0; typeof x === 'object' && x !== null && depth < 3; x = (x as { cause?: unknown }).cause, depth++)
    issues ||= Array.isArray((x as { issues?: unknown }).issues);
  if (!issues) return head;
  return head === '' || head.startsWith('[') ? schemaProblem(e) : `${head} (${schemaProblem(e)})`;
}

/** An error and its causes on one line, each with its code: `fetch failed: other side closed (UND_ERR_SOCKET)`. */
export function describeCause(e: unknown): string {
  const parts: string[] = [];
  for (let x: unknown = e, depth = 0; x !== undefined && x !== null && depth < 5; x = (x as { cause?: unknown }).cause, depth++) {
    const message = x instanceof Error ? x.message : typeof x === 'object' ? '' : String(x);
    const code = (x as { code?: unknown }).code;
    const text = typeof code === 'string' && !message.includes(code) ? (message === '' ? code : `${message} (${code})`) : message;
    if (text !== '' && !parts.some((p) => p.includes(text))) parts.push(text);
    if (typeof x !== 'object') break;
  }
  return parts.join(': ');
}

/** Whether an error comes from a connection the server closed or reset (it went away mid-conversation). */
export function connectionLost(e: unknown): boolean {
  for (let x: unknown = e, depth = 0; x !== undefined && x !== null && depth < 5; x = (x as { cause?: unknown }).cause, depth++) {
    const code = (x as { code?: unknown }).code;
    if (typeof code === 'string' && /^(UND_ERR_SOCKET|UND_ERR_CLOSED|ECONNRESET|EPIPE)$/.test(code)) return true;
  }
  return false;
}

/** The protocols a judge knows, by the name `--protocol` takes. */
export const JUDGED_PROTOCOLS = ['ai-sdk-v6', 'ag-ui', 'a2a', 'mcp', 'acp'] as const;
export type JudgedProtocol = (typeof JUDGED_PROTOCOLS)[number];

const A2A_PAYLOADS = ['task', 'message', 'statusUpdate', 'artifactUpdate'];
const A2A_KINDS = ['task', 'message', 'status-update', 'artifact-update'];

/** The protocol one frame's JSON is of, by the shape each one's frames have, if it is recognisably one. */
function frameProtocol(v: unknown): JudgedProtocol | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  if (o['jsonrpc'] === '2.0') {
    const method = typeof o['method'] === 'string' ? o['method'] : undefined;
    const result = typeof o['result'] === 'object' && o['result'] !== null ? (o['result'] as Record<string, unknown>) : undefined;
    if (method?.startsWith('session/') === true || result?.['stopReason'] !== undefined) return 'acp';
    if (method?.startsWith('notifications/') === true || result?.['content'] !== undefined || result?.['tools'] !== undefined) return 'mcp';
    if (result !== undefined && (A2A_PAYLOADS.some((k) => k in result) || A2A_KINDS.includes(String(result['kind'])))) return 'a2a';
    return undefined;
  }
  // An event's type names it (an AG-UI RUN_ERROR carries a `message` as an A2A payload would).
  const type = o['type'];
  if (typeof type === 'string' && /^[A-Z][A-Z0-9_]*$/.test(type)) return 'ag-ui';
  if (typeof type === 'string' && /^[a-z][a-z0-9-]*$/.test(type)) return 'ai-sdk-v6';
  if (A2A_PAYLOADS.some((k) => typeof o[k] === 'object' && o[k] !== null) || A2A_KINDS.includes(String(o['kind']))) return 'a2a';
  return undefined;
}

/**
 * The protocol a body looks like when it is not `protocol`'s: none of its frames has the shape of
 * `protocol`'s, and at least half have the shape of one other's (an SSE body's `data:` JSON, an NDJSON body's
 * lines; `data: [DONE]` is the AI SDK's). Undefined when it may be `protocol`'s, or is nothing
 * recognisable: the judge then says what is wrong with it.
 */
export function otherProtocolOf(body: string, protocol: JudgedProtocol): JudgedProtocol | undefined {
  const sse = /^data:/m.test(body);
  const values: unknown[] = [];
  for (const frame of sse ? sseFrames(body) : ndjsonFrames(body)) {
    const text = sse ? sseData(frame) : { data: frame.text };
    if (!('data' in text)) continue;
    if (text.data.trim() === '[DONE]') {
      values.push({ type: 'done' });
      continue;
    }
    try {
      values.push(JSON.parse(text.data));
    } catch {
      values.push(undefined);
    }
  }
  const counts = new Map<JudgedProtocol, number>();
  for (const v of values) {
    const p = frameProtocol(v);
    if (p !== undefined) counts.set(p, (counts.get(p) ?? 0) + 1);
  }
  if ((counts.get(protocol) ?? 0) > 0) return undefined;
  const [best] = [...counts].sort((a, b) => b[1] - a[1]);
  return best !== undefined && best[1] * 2 >= values.length ? best[0] : undefined;
}

/** The network's reason a request got no answer, when it is one. */
export function unreachableCode(e: unknown): string | undefined {
  for (let x: unknown = e, depth = 0; x !== undefined && x !== null && depth < 4; x = (x as { cause?: unknown }).cause, depth++) {
    const code = (x as { code?: unknown }).code;
    if (typeof code === 'string' && /^(ECONNREFUSED|ENOTFOUND|ECONNRESET|EHOSTUNREACH|ETIMEDOUT|EAI_AGAIN)$/.test(code)) return code;
    const inner = (x as { errors?: unknown[] }).errors?.[0];
    if (inner !== undefined) return unreachableCode(inner);
  }
  return undefined;
}

/**
 * A `fetch` that keeps a copy of every response body for `bodies` and hands the other copy to the
 * client; a response that is not 2xx ends the drive with a `DriveFailure` naming it.
 */
export function tappedFetch(
  bodies: Promise<string>[],
  headers: Readonly<Record<string, string>> = {},
  keep: (url: string) => boolean = () => true,
): typeof fetch {
  return async (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers)) merged.set(k, v);
    const url = String(input instanceof Request ? input.url : input);
    let response: Response;
    try {
      response = await fetch(input, { ...init, headers: merged });
    } catch (e) {
      const code = unreachableCode(e);
      throw code !== undefined ? new Unreachable(`${url} does not answer (${code})`) : e;
    }
    if (!response.ok) throw new DriveFailure(`${init?.method ?? 'GET'} ${url} answered ${response.status}: ${quoteOf(await response.text())}`);
    if (response.body === null || !keep(url)) return response;
    const [mine, theirs] = response.body.tee();
    const text = new Response(theirs).text();
    // Read by the drive at its end; a body cut off before then rejects there, not unhandled now.
    text.catch(() => undefined);
    bodies.push(text);
    return new Response(mine, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
