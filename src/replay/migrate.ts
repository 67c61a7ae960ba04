import type { ToolCallResume } from '../contract/tool.ts';
import { migrateFailedInferences } from './failed-inference-migration.ts';
import {
  configDigest,
  digestOf,
  parseRecord,
  recordedDecision,
  RequestChain,
  SuspensionModes,
  TRANSCRIPT_FORMAT,
  type Header,
  type NormalisedRequest,
} from './transcript.ts';

/** The format tags of older transcripts. */
export const TRANSCRIPT_FORMAT_1 = 'awaken-transcript/1';
export const TRANSCRIPT_FORMAT_2 = 'awaken-transcript/2';
export const TRANSCRIPT_FORMAT_3 = 'awaken-transcript/3';
export const TRANSCRIPT_FORMAT_4 = 'awaken-transcript/4';
export const TRANSCRIPT_FORMAT_5 = 'awaken-transcript/5';
export const TRANSCRIPT_FORMAT_6 = 'awaken-transcript/6';
export const TRANSCRIPT_FORMAT_7 = 'awaken-transcript/7';
export const TRANSCRIPT_FORMAT_8 = 'awaken-transcript/8';
export const TRANSCRIPT_FORMAT_9 = 'awaken-transcript/9';
export const TRANSCRIPT_FORMAT_10 = 'awaken-transcript/10';
export const TRANSCRIPT_FORMAT_11 = 'awaken-transcript/11';

const OLDER = [
  TRANSCRIPT_FORMAT_1,
  TRANSCRIPT_FORMAT_2,
  TRANSCRIPT_FORMAT_3,
  TRANSCRIPT_FORMAT_4,
  TRANSCRIPT_FORMAT_5,
  TRANSCRIPT_FORMAT_6,
  TRANSCRIPT_FORMAT_7,
  TRANSCRIPT_FORMAT_8,
  TRANSCRIPT_FORMAT_9,
  TRANSCRIPT_FORMAT_10,
  TRANSCRIPT_FORMAT_11,
] as const;
type OlderFormat = (typeof OLDER)[number];

/** Why a transcript cannot be brought up to the current format, and where. */
export class MigrationFailure extends Error {
  readonly line: number;
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = 'MigrationFailure';
    this.line = line;
  }
}

type Json = Record<string, unknown>;

/** The older format a transcript's first line names, if it names one. */
export function olderFormat(text: string): OlderFormat | undefined {
  for (const f of OLDER) if (text.startsWith(`{"type":"header","format":"${f}"`)) return f;
  return undefined;
}

/** An older transcript in the current format, and what format 1 said that later formats read from the `end` record. */
export interface Migrated {
  readonly text: string;
  /** Format 1's `options.wait_for_decisions` (format 1 has no `end` record to derive it from). */
  readonly waitForDecisions?: boolean;
}

/** `migrate(text).text`: an older transcript rewritten in the current format (a format-1 one without its `end` record). */
export const migrateTranscript = (text: string): string => migrate(text).text;

/**
 * A change of what the runtime emits for a recorded run, as a rewrite of a transcript's lines: format-4
 * content in (its header already in the current format), the lines as the runtime now runs the
 * same inputs out — pure, text to text, every line it has no reason to touch kept byte for byte.
 */
export interface TranscriptRewrite {
  readonly name: string;
  readonly rewrite: (text: string) => string;
}

/**
 * Format 4 → 5, in order. The header gains `request.owner` (none can be given to an older
 * transcript: it stays nobody's, the admin's under access control); and what the runtime now emits
 * differently is one rewrite each. Format 5 → 6 changes only the header, so these apply to formats
 * 1 to 4 alone: a later change of what a recorded run emits is a format of its own, with its own
 * list (and `replay/migrate-corpus.ts` brings the corpus along, judged by replaying it).
 */
export const FORMAT_5_REWRITES: readonly TranscriptRewrite[] = [
  { name: 'a suspended step is counted as it parks', rewrite: countSuspendedSteps },
  { name: 'a failed inference emits no inference_complete (an error event when it ends the run)', rewrite: migrateFailedInferences },
];

/**
 * Rewrites a format-1 to 11 transcript in the current format (`awaken-transcript/12`), without
 * running anything. What a later format no longer writes is checked first, so that nothing the run
 * depended on is dropped.
 *
 * Format 1 → 2:
 * - `header.runtime` (which build recorded it) is gone: nothing in a replay reads it;
 * - `header.options.wait_for_decisions` is gone: format 2 derives it from the records (decisions, or
 *   a last segment that ended suspended but a run that did not). It is returned for the replay of the
 *   migrated text, which has no `end` record; one that is false beside decision records is refused;
 * - `header.env.seed` is written only when the run drew a random number;
 * - `config_digest` also covers the circuit breaker (format 1's digest is verified, then recomputed);
 * - a tool record's `resumed: true` becomes `resume`: the decision the call ran under, taken from the
 *   last decision record addressed to that call before it.
 *
 * Format 2 → 3: each `llm` record's request (checked against its digest first) is written as its
 * change from the previous request (`RequestDelta`), under the chained digest.
 *
 * Format 3 → 4: a `resume` decision for a call suspended in `use_decision_as_tool_result` mode (the
 * mode its `tool_call_done` event reports) loses `decision_id` and `updated_at`: such a call keeps
 * only the decision's result (`keepsWholeDecision`).
 *
 * Up to format 4, every other line is kept byte for byte, so event payloads are unchanged. Format 4 →
 * 5: the header's tag, then `FORMAT_5_REWRITES` in order (these do change events: what the runtime
 * now emits for the same inputs).
 *
 * Format 5 → 6 (`currentHeader`): the header's `plugins`, ids until then, become `{id}` entries —
 * every plugin a transcript could name was a catalog one, which format 6 writes so — and
 * `config_digest`, which covers them, is recomputed (the old one verified first). Every other line
 * is kept byte for byte.
 *
 * Format 6 → 7: the header's tag alone. Format 7 adds what a segment of a run taken up again from the
 * store writes (`segment`, `request.run_state`, a decision or cancel `after_event` 0), and the `ask`
 * record (a tool's question at the gate); a format-6 transcript is a run's first segment, or the
 * whole run, and has none of them.
 *
 * Format 7 → 8: the header's tag alone. Format 8 adds the `response_metadata` part of an `llm`
 * record's parts (what the provider said of its answer — its id, the model it says answered — and of
 * itself: its conventions' name, the host and port it was reached at); a format-7 recorder never
 * wrote one, and its inferences replay without those facts, as they ran.
 *
 * Format 8 → 9: the header's tag alone. Format 9 adds the `unavailable_before_dispatch` code of a
 * `tool` record's `tool_error` (the call never reached the tool, so it may be retried); no older
 * recorder wrote one, and a transcript of an older format that has one is refused, naming its line.
 *
 * Format 9 → 10: the header's tag alone. Format 10 adds what the run's client brought besides
 * messages to the header's request (`client_tools`, `client_state`, `client_context`); no older
 * recorder wrote them, and a transcript of an older format whose header has any is refused, naming
 * line 1.
 *
 * Format 10 → 11 (`withA2uiV08`, after the steps above, for every format before 11): the header of a run
 * whose agent runs the `generative-ui` plugin, and whose section of it names no A2UI version, says
 * `version: "v0.8"` in that section — the only version the plugin spoke until format 11, whose
 * plugin speaks v0.9 unless told — and `config_digest`, which covers it, is recomputed (the old one
 * verified first). Every other header, and every other line, is kept byte for byte.
 *
 * Format 11 → 12: the header's `format` alone changes. Format 12 adds `fork` to a header (a run forked
 * from another's step, `forkTranscript`); no older recorder wrote one, so one in an older header is
 * refused.
 */
export function migrate(text: string): Migrated {
  const older = olderFormat(text);
  if (older !== undefined) refuseFork(text, older);
  if (older === TRANSCRIPT_FORMAT_11) return { text: retag(text, older) };
  if (older !== undefined) {
    const lines = text.split('\n');
    if (older !== TRANSCRIPT_FORMAT_10) refuseFormat10(lines, older);
    if (older !== TRANSCRIPT_FORMAT_10 && older !== TRANSCRIPT_FORMAT_9) refuseFormat9(lines, older);
  }
  const migrated = toFormat10Content(text, older);
  return { ...migrated, text: withA2uiV08(migrated.text) };
}

/** An older transcript with format 10's content, under the current tag (one of no older format is refused by `toFormat4`). */
function toFormat10Content(text: string, older: OlderFormat | undefined): Migrated {
  if (
    older === TRANSCRIPT_FORMAT_10 ||
    older === TRANSCRIPT_FORMAT_9 ||
    older === TRANSCRIPT_FORMAT_8 ||
    older === TRANSCRIPT_FORMAT_7 ||
    older === TRANSCRIPT_FORMAT_6
  )
    return { text: retagged(text, older) };
  if (older === TRANSCRIPT_FORMAT_5) return { text: withCurrentHeader(text) };
  const four = older === TRANSCRIPT_FORMAT_4 ? { text: withCurrentHeader(text) } : toFormat4(text);
  let out = four.text;
  for (const r of FORMAT_5_REWRITES) out = r.rewrite(out);
  return { ...four, text: out };
}

/** The plugin, and its section's key, whose default changed in format 11. */
const A2UI_PLUGIN = 'generative-ui';

/**
 * Format 10 → 11: a header (already under the current tag) whose agent runs `generative-ui` with no
 * A2UI version in its section names v0.8 there, the version it ran with, under a recomputed
 * `config_digest`; any other header is kept byte for byte. An unreadable header is left to the replay.
 */
function withA2uiV08(text: string): string {
  const end = text.indexOf('\n');
  const first = end < 0 ? text : text.slice(0, end);
  let header: Json;
  try {
    header = JSON.parse(first) as Json;
  } catch {
    return text;
  }
  const agent = header['agent'] as { plugin_ids?: unknown; sections?: unknown } | undefined;
  if (typeof agent !== 'object' || agent === null || !Array.isArray(agent.plugin_ids) || !agent.plugin_ids.includes(A2UI_PLUGIN)) return text;
  const sections = (typeof agent.sections === 'object' && agent.sections !== null ? agent.sections : {}) as Json;
  const own = sections[A2UI_PLUGIN];
  const section = (typeof own === 'object' && own !== null && !Array.isArray(own) ? own : {}) as Json;
  if (section['version'] !== undefined) return text;
  if (configDigest(header as unknown as Header) !== header['config_digest']) throw new MigrationFailure(1, 'the header does not match its config_digest');
  const next: Json = { ...header, agent: { ...agent, sections: { ...sections, [A2UI_PLUGIN]: { ...section, version: 'v0.8' } } } };
  next['config_digest'] = configDigest(next as unknown as Header);
  return `${JSON.stringify(next)}${end < 0 ? '' : text.slice(end)}`;
}

/**
 * A format-6, 7, 8, 9 or 10 transcript under the current tag: the header's `format` alone changes, every
 * other byte is kept. What only a later format writes is refused first — a format-6 recorder never
 * wrote a segment's number and run state, a decision or cancel before any event, an ask record
 * (format 7); neither wrote a `response_metadata` part (format 8). (What only format 9 or 10 writes
 * is refused in every format before it, by `migrate`.)
 */
function retagged(
  text: string,
  from: typeof TRANSCRIPT_FORMAT_6 | typeof TRANSCRIPT_FORMAT_7 | typeof TRANSCRIPT_FORMAT_8 | typeof TRANSCRIPT_FORMAT_9 | typeof TRANSCRIPT_FORMAT_10,
): string {
  if (from === TRANSCRIPT_FORMAT_10 || from === TRANSCRIPT_FORMAT_9 || from === TRANSCRIPT_FORMAT_8) return retag(text, from);
  const lines = text.split('\n');
  // A quote inside a JSON string is escaped: this is a part's own `type`, never a message's text.
  const described = lines.findIndex((l) => l.startsWith('{"type":"llm"') && l.includes('{"type":"response_metadata"'));
  if (described >= 0) throw new MigrationFailure(described + 1, `a response_metadata part: format ${from.slice(-1)} has none (it is format 8)`);
  if (from === TRANSCRIPT_FORMAT_6) refuseFormat7(lines);
  return retag(text, from);
}

/** The text under the current tag, every byte after the header's `format` kept. */
function retag(text: string, from: OlderFormat): string {
  const tag = `{"type":"header","format":"${from}"`;
  // `olderFormat` found the tag exactly here.
  return `{"type":"header","format":"${TRANSCRIPT_FORMAT}"${text.slice(tag.length)}`;
}

/** What only format 12 writes, refused in an older header: `fork` (a run forked from another's step). An unreadable header is left to the migration that reads it. */
function refuseFork(text: string, from: OlderFormat): void {
  const end = text.indexOf('\n');
  let header: unknown;
  try {
    header = JSON.parse(end < 0 ? text : text.slice(0, end));
  } catch {
    return;
  }
  if (typeof header === 'object' && header !== null && Object.hasOwn(header, 'fork'))
    throw new MigrationFailure(1, `fork: a format-${from.slice(from.indexOf('/') + 1)} header has none (it is format 12)`);
}

/** The fields of a header's request that only format 10 writes: what the run's client brought besides messages. */
const FORMAT_10_REQUEST_FIELDS = ['client_tools', 'client_state', 'client_context'] as const;

/**
 * What only format 10 writes, refused in any older transcript's header: a request with the client's
 * tools, state or context — no older recorder wrote them, and a replay of such a run without them
 * would not be the run. An unreadable header is left to the migration that reads it.
 */
function refuseFormat10(lines: readonly string[], from: OlderFormat): void {
  let header: unknown;
  try {
    header = JSON.parse(lines[0] as string);
  } catch {
    return;
  }
  const request = typeof header === 'object' && header !== null ? (header as { request?: unknown }).request : undefined;
  if (typeof request !== 'object' || request === null) return;
  const field = FORMAT_10_REQUEST_FIELDS.find((f) => Object.hasOwn(request, f));
  if (field !== undefined) throw new MigrationFailure(1, `request.${field}: a format-${from.slice(from.indexOf('/') + 1)} header has none (it is format 10)`);
}

/**
 * What only format 9 writes, refused in the lines of a transcript before format 9: a `tool` record whose
 * `tool_error` is `unavailable_before_dispatch` — no older recorder wrote that code. The record is
 * read whole, so the same words in a result's data or an argument are not taken for it.
 */
function refuseFormat9(lines: readonly string[], from: OlderFormat): void {
  for (const [i, l] of lines.entries()) {
    if (!l.startsWith('{"type":"tool"') || !l.includes('"unavailable_before_dispatch"')) continue;
    let record: { tool_error?: { code?: unknown } };
    try {
      record = JSON.parse(l) as typeof record;
    } catch {
      // An unreadable line is kept as it is: the replay reports it where the run reaches it.
      continue;
    }
    if (record.tool_error?.code === 'unavailable_before_dispatch')
      throw new MigrationFailure(i + 1, `a tool error unavailable_before_dispatch: format ${from.slice(-1)} has none (it is format 9)`);
  }
}

/** What only format 7 writes, refused in a format-6 transcript's lines. */
function refuseFormat7(lines: readonly string[]): void {
  let header: { segment?: unknown; request?: { run_state?: unknown } };
  try {
    header = JSON.parse(lines[0] as string) as typeof header;
  } catch (e) {
    throw new MigrationFailure(1, `not JSON: ${(e as Error).message}`);
  }
  if (header.segment !== undefined) throw new MigrationFailure(1, 'segment: a format-6 header has none (it is format 7)');
  if (header.request?.run_state !== undefined) throw new MigrationFailure(1, 'request.run_state: a format-6 header has none (it is format 7)');
  const early = lines.findIndex((l) => /^\{"type":"(decision|cancel)","after_event":0[,}]/.test(l));
  if (early >= 0) throw new MigrationFailure(early + 1, 'after_event 0: a format-6 decision or cancel comes after an event');
  const ask = lines.findIndex((l) => l.startsWith('{"type":"ask"'));
  if (ask >= 0) throw new MigrationFailure(ask + 1, 'an ask record: format 6 has none (it is format 7)');
}

/**
 * A format-4 or 5 transcript with its header in the current format (`currentHeader`), checked like an
 * older one's first; every other line kept byte for byte.
 */
function withCurrentHeader(text: string): string {
  const end = text.indexOf('\n');
  const first = end < 0 ? text : text.slice(0, end);
  let header: unknown;
  try {
    header = JSON.parse(first);
  } catch (e) {
    throw new MigrationFailure(1, `not JSON: ${(e as Error).message}`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new MigrationFailure(1, 'not a record');
  if (configDigest(header as Header) !== (header as { config_digest?: unknown }).config_digest)
    throw new MigrationFailure(1, 'the header does not match its config_digest');
  return `${JSON.stringify(currentHeader(header as Json))}${end < 0 ? '' : text.slice(end)}`;
}

/**
 * A header of format 5 or before in the current format: its tag, each plugin id as an `{id}` entry
 * (only catalog plugins could be named before format 6) and `config_digest` over them — the rest of
 * it, key order included, as it was.
 */
function currentHeader(header: Json): Json {
  const plugins = header['plugins'];
  if (!Array.isArray(plugins)) throw new MigrationFailure(1, 'plugins: not a list of plugin ids');
  const entries = plugins.map((id, i) => {
    if (typeof id !== 'string') throw new MigrationFailure(1, `plugins[${i}]: not a plugin id`);
    return { id };
  });
  const next: Json = { ...header, format: TRANSCRIPT_FORMAT, plugins: entries };
  next['config_digest'] = configDigest(next as unknown as Header);
  return next;
}

/**
 * Format 5 counts a step whose batch waits as the run parks (`RunLoop`: StepCompleted in the commit
 * that sets the run waiting), where format 4 did not count it at all: from that step's end on, each
 * `state_snapshot` shows the run lifecycle's `step_count` one higher for every such step. The step's
 * end is its first `state_snapshot` (between its `step_start` and `step_end`) whose lifecycle is
 * `waiting`. A snapshot line that is not in canonical form is kept as it is (the replay reports it).
 */
function countSuspendedSteps(text: string): string {
  const lines = text.split('\n');
  let inStep = false;
  let parked = false;
  let extra = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (!line.startsWith('{"type":"event"')) continue;
    let record: { event?: { event_type?: unknown; snapshot?: { extensions?: Record<string, unknown> } } };
    try {
      record = JSON.parse(line) as typeof record;
    } catch {
      continue;
    }
    const event = record.event;
    if (event?.event_type === 'step_start') [inStep, parked] = [true, false];
    else if (event?.event_type === 'step_end') inStep = false;
    if (event?.event_type !== 'state_snapshot') continue;
    const lifecycle = event.snapshot?.extensions?.['__runtime.run_lifecycle'] as { status?: unknown; step_count?: unknown } | undefined;
    if (lifecycle === undefined || typeof lifecycle.step_count !== 'number') continue;
    if (inStep && !parked && lifecycle.status === 'waiting') [parked, extra] = [true, extra + 1];
    if (extra === 0 || JSON.stringify(record) !== line) continue;
    lifecycle.step_count += extra;
    lines[i] = JSON.stringify(record);
  }
  return lines.join('\n');
}

/** A format-1, 2 or 3 transcript with format 4's content (under the current header). */
function toFormat4(text: string): Migrated {
  const lines = text.trimEnd().split('\n');
  const records = lines.map((l, i) => {
    let json: unknown;
    try {
      json = JSON.parse(l);
    } catch (e) {
      throw new MigrationFailure(i + 1, `not JSON: ${(e as Error).message}`);
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new MigrationFailure(i + 1, 'not a record');
    return json as Json;
  });
  const header = records[0];
  const format = header?.['type'] === 'header' ? header['format'] : undefined;
  if (
    header === undefined ||
    format === TRANSCRIPT_FORMAT_4 ||
    format === TRANSCRIPT_FORMAT_5 ||
    format === TRANSCRIPT_FORMAT_6 ||
    format === TRANSCRIPT_FORMAT_7 ||
    format === TRANSCRIPT_FORMAT_8 ||
    format === TRANSCRIPT_FORMAT_9 ||
    format === TRANSCRIPT_FORMAT_10 ||
    !OLDER.includes(format as OlderFormat)
  )
    throw new MigrationFailure(1, `not a ${OLDER.join(', ')} header`);
  const first = format === TRANSCRIPT_FORMAT_1;
  const wholeRequests = format !== TRANSCRIPT_FORMAT_3;
  const v1Digest = digestOf({
    agent: header['agent'],
    models: header['models'],
    tools: header['tools'],
    plugins: header['plugins'],
    stop_policies: header['stop_policies'],
  });
  if (first ? v1Digest !== header['config_digest'] : configDigest(header as unknown as Header) !== header['config_digest']) {
    throw new MigrationFailure(1, 'the header does not match its config_digest');
  }

  let wait: boolean | undefined;
  let next: Json = header;
  if (first) {
    const w = (header['options'] as { wait_for_decisions?: unknown } | undefined)?.wait_for_decisions;
    if (typeof w !== 'boolean') throw new MigrationFailure(1, 'options.wait_for_decisions is not a boolean');
    if (!w && records.some((r) => r['type'] === 'decision'))
      throw new MigrationFailure(1, 'options.wait_for_decisions is false, but the transcript has decision records');
    wait = w;
    const env = { ...(header['env'] as Json) };
    if (env['kind'] === 'deterministic' && !records.some((r) => r['type'] === 'env' && r['draw'] === 'random')) delete env['seed'];
    const { runtime: _runtime, options: _options, ...rest } = header;
    next = { ...rest, env };
  }
  next = currentHeader(next);

  const out: string[] = [];
  const decided = new Map<string, unknown>();
  const requests = new RequestChain();
  const modes = new SuspensionModes();
  for (const [i, r] of records.entries()) {
    let record: Json | undefined;
    try {
      record = migrated(i, r);
    } catch (e) {
      if (e instanceof MigrationFailure) throw e;
      // A record of an unexpected shape (an edited one): say where, never throw anything else.
      throw new MigrationFailure(i + 1, `unreadable ${String(r?.['type'])} record: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (record === undefined) {
      out.push(lines[i] as string);
      continue;
    }
    const parsed = parseRecord(record);
    if (!parsed.success) throw new MigrationFailure(i + 1, parsed.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; '));
    out.push(JSON.stringify(parsed.data));
  }
  return { text: `${out.join('\n')}\n`, ...(wait !== undefined ? { waitForDecisions: wait } : {}) };

  /** Record `i` in the current format, or undefined to keep its line as it is. */
  function migrated(i: number, r: Json): Json | undefined {
    let record: Json | undefined;
    if (i === 0) record = next;
    else if (r['type'] === 'event') modes.note(r['event']);
    else if (r['type'] === 'decision') {
      const decisions = r['decisions'] as { target_id: string; decision: ToolCallResume }[];
      for (const d of decisions) decided.set(d.target_id, d.decision);
      record = { ...r, decisions: decisions.map((d) => ({ target_id: d.target_id, decision: recordedDecision(d.decision, modes.of(d.target_id)) })) };
    } else if (r['type'] === 'tool' && first) {
      const { resumed, ...tool } = r;
      if (resumed === true && !decided.has(tool['call_id'] as string))
        throw new MigrationFailure(i + 1, `the resumed call ${String(tool['call_id'])} has no decision before it`);
      const { activity, ...head } = tool;
      record = { ...head, ...(resumed === true ? { resume: decided.get(tool['call_id'] as string) } : {}), activity };
    } else if (r['type'] === 'llm' && wholeRequests) {
      const request = r['request'] as NormalisedRequest;
      if (digestOf(request) !== r['digest']) throw new MigrationFailure(i + 1, 'the recorded request does not match its digest');
      const { delta, digest } = requests.next(request);
      record = { ...r, digest, request: delta };
    }
    return record;
  }
}
