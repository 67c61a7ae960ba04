import type { ToolCallResume } from '../contract/tool.ts';
import { configDigest, digestOf, parseRecord, recordedDecision, RequestChain, SuspensionModes, TRANSCRIPT_FORMAT, type Header, type NormalisedRequest } from './transcript.ts';

/** The format tags of older transcripts. */
export const TRANSCRIPT_FORMAT_1 = 'awaken-transcript/1';
export const TRANSCRIPT_FORMAT_2 = 'awaken-transcript/2';
export const TRANSCRIPT_FORMAT_3 = 'awaken-transcript/3';

const OLDER = [TRANSCRIPT_FORMAT_1, TRANSCRIPT_FORMAT_2, TRANSCRIPT_FORMAT_3] as const;
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
 * Rewrites a format-1, 2 or 3 transcript in the current format (`awaken-transcript/4`), without
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
 * Every other line is kept byte for byte, so event payloads are unchanged.
 */
export function migrate(text: string): Migrated {
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
  if (header === undefined || !OLDER.includes(format as OlderFormat)) throw new MigrationFailure(1, `not a ${OLDER.join(', ')} header`);
  const first = format === TRANSCRIPT_FORMAT_1;
  const wholeRequests = format !== TRANSCRIPT_FORMAT_3;
  const v1Digest = digestOf({ agent: header['agent'], models: header['models'], tools: header['tools'], plugins: header['plugins'], stop_policies: header['stop_policies'] });
  if (first ? v1Digest !== header['config_digest'] : configDigest(header as unknown as Header) !== header['config_digest']) {
    throw new MigrationFailure(1, 'the header does not match its config_digest');
  }

  let wait: boolean | undefined;
  let next: Json = { ...header, format: TRANSCRIPT_FORMAT };
  if (first) {
    const w = (header['options'] as { wait_for_decisions?: unknown } | undefined)?.wait_for_decisions;
    if (typeof w !== 'boolean') throw new MigrationFailure(1, 'options.wait_for_decisions is not a boolean');
    if (!w && records.some((r) => r['type'] === 'decision')) throw new MigrationFailure(1, 'options.wait_for_decisions is false, but the transcript has decision records');
    wait = w;
    const env = { ...(header['env'] as Json) };
    if (env['kind'] === 'deterministic' && !records.some((r) => r['type'] === 'env' && r['draw'] === 'random')) delete env['seed'];
    const { runtime: _runtime, options: _options, ...rest } = header;
    next = { ...rest, format: TRANSCRIPT_FORMAT, env };
    next['config_digest'] = configDigest(next as unknown as Header);
  }

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
      if (resumed === true && !decided.has(tool['call_id'] as string)) throw new MigrationFailure(i + 1, `the resumed call ${String(tool['call_id'])} has no decision before it`);
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
