import { configDigest, digestOf, parseRecord, TRANSCRIPT_FORMAT, type Header } from './transcript.ts';

/** The format tag of the first transcripts. */
export const TRANSCRIPT_FORMAT_1 = 'awaken-transcript/1';

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

/** Whether a transcript's first line is a format-1 header. */
export const isFormat1 = (text: string): boolean => text.startsWith(`{"type":"header","format":"${TRANSCRIPT_FORMAT_1}"`);

/** A format-1 transcript in format 2, and what format 1 said that format 2 reads from its `end` record. */
export interface Migrated {
  readonly text: string;
  /** Format 1's `options.wait_for_decisions`: format 2 derives it from the `end` record, which format 1 lacks. */
  readonly waitForDecisions: boolean;
}

/** `migrate(text).text`: a format-1 transcript rewritten in format 2 (without its `end` record). */
export const migrateTranscript = (text: string): string => migrate(text).text;

/**
 * Rewrites a format-1 transcript in the current format (`awaken-transcript/2`), without running
 * anything. What format 2 no longer writes is checked first, so that nothing the run depended on is
 * dropped:
 *
 * - `header.runtime` (which build recorded it) is gone: nothing in a replay reads it;
 * - `header.options.wait_for_decisions` is gone: format 2 derives it from the records (decisions, or
 *   a last segment that ended suspended but a run that did not). It is returned for the replay of the
 *   migrated text, which has no `end` record; one that is false beside decision records is refused;
 * - `header.env.seed` is written only when the run drew a random number;
 * - `config_digest` also covers the circuit breaker (format 1's digest is verified, then recomputed);
 * - a tool record's `resumed: true` becomes `resume`: the decision the call ran under, taken from the
 *   last decision record addressed to that call before it.
 *
 * Every other line is kept byte for byte, so event payloads are unchanged.
 */
export function migrate(text: string): Migrated {
  const lines = text.trimEnd().split('\n');
  const records = lines.map((l, i) => {
    try {
      return JSON.parse(l) as Json;
    } catch (e) {
      throw new MigrationFailure(i + 1, `not JSON: ${(e as Error).message}`);
    }
  });
  const header = records[0];
  if (header === undefined || header['type'] !== 'header' || header['format'] !== TRANSCRIPT_FORMAT_1) throw new MigrationFailure(1, `not a ${TRANSCRIPT_FORMAT_1} header`);
  const v1Digest = digestOf({ agent: header['agent'], models: header['models'], tools: header['tools'], plugins: header['plugins'], stop_policies: header['stop_policies'] });
  if (v1Digest !== header['config_digest']) throw new MigrationFailure(1, 'the header does not match its config_digest');

  const wait = (header['options'] as { wait_for_decisions?: unknown } | undefined)?.wait_for_decisions;
  if (typeof wait !== 'boolean') throw new MigrationFailure(1, 'options.wait_for_decisions is not a boolean');
  if (!wait && records.some((r) => r['type'] === 'decision')) throw new MigrationFailure(1, 'options.wait_for_decisions is false, but the transcript has decision records');

  const env = { ...(header['env'] as Json) };
  if (env['kind'] === 'deterministic' && !records.some((r) => r['type'] === 'env' && r['draw'] === 'random')) delete env['seed'];
  const { runtime: _runtime, options: _options, ...rest } = header;
  const next: Json = { ...rest, format: TRANSCRIPT_FORMAT, env };
  next['config_digest'] = configDigest(next as unknown as Header);

  const out: string[] = [];
  const decided = new Map<string, unknown>();
  for (const [i, r] of records.entries()) {
    let record: Json | undefined;
    if (i === 0) record = next;
    else if (r['type'] === 'decision') {
      for (const d of r['decisions'] as { target_id: string; decision: unknown }[]) decided.set(d.target_id, d.decision);
    } else if (r['type'] === 'tool') {
      const { resumed, ...tool } = r;
      if (resumed === true && !decided.has(tool['call_id'] as string)) throw new MigrationFailure(i + 1, `the resumed call ${String(tool['call_id'])} has no decision before it`);
      const { activity, ...head } = tool;
      record = { ...head, ...(resumed === true ? { resume: decided.get(tool['call_id'] as string) } : {}), activity };
    }
    if (record === undefined) {
      out.push(lines[i] as string);
      continue;
    }
    const parsed = parseRecord(record);
    if (!parsed.success) throw new MigrationFailure(i + 1, parsed.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; '));
    out.push(JSON.stringify(parsed.data));
  }
  return { text: `${out.join('\n')}\n`, waitForDecisions: wait };
}
