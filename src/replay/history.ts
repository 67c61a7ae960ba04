import type { JsonValue } from '../contract/json.ts';
import { jsonChanges, renderChanges } from './json-diff.ts';
import type { PortDivergence } from './replayer.ts';
import type { Mismatch, StrictLog } from './strict-log.ts';

/*
 * How a history that differs is told: the record on each side in a few words, the port of the
 * replay's, a path diff when the two are records of one type, and the equivalences the comparison
 * allows (an event in its place is the event comparison's; a cancelled stream recorded either way).
 */

/** A line of a transcript in a few words: its record type and what names it. */
function describeLine(text: string): string {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return 'a line that is not JSON';
  }
  switch (r['type']) {
    case 'event': {
      const e = r['event'] as Record<string, unknown> | undefined;
      return `event #${String(r['seq'])} (${String(e?.['event_type'])})`;
    }
    case 'env':
      return `env draw ${String(r['draw'])}${r['kind'] !== undefined ? `(${String(r['kind'])})` : ''}`;
    case 'llm':
      return `the response to request #${String(r['seq'])}`;
    case 'tool':
      return `the outcome of tool call ${String(r['name'])} [${String(r['call_id'])}]`;
    case 'ask':
      return `the question at the gate for ${String(r['name'])} [${String(r['call_id'])}]`;
    case 'decision':
    case 'cancel':
      return `a ${r['type']} after ${String(r['after_event'])} event(s)`;
    case 'end':
      return 'the end record';
    case 'header':
      return 'a header';
    default:
      return `a ${JSON.stringify(r['type'])} record`;
  }
}

const PORT_OF: Readonly<Record<string, PortDivergence['port']>> = {
  event: 'event',
  env: 'env',
  llm: 'llm',
  tool: 'tool',
  ask: 'tool',
  decision: 'decision',
  cancel: 'cancel',
  end: 'end',
};

/** The port a transcript line belongs to (`transcript` for one that is no port's). */
function portOfLine(text: string | undefined): PortDivergence['port'] {
  const type = text === undefined ? undefined : /^\{"type":"([a-z]+)"/.exec(text)?.[1];
  return (type !== undefined ? PORT_OF[type] : undefined) ?? 'transcript';
}

/** Where the replay's history leaves the transcript's: the port of what the replay has there, and both lines. */
export function historyDivergence(m: Mismatch): Omit<PortDivergence, 'atEvent'> {
  const recorded = m.recorded === undefined ? 'nothing (the transcript ends before it)' : describeLine(m.recorded);
  const replayed = m.replayed === undefined ? 'had ended' : `has ${describeLine(m.replayed)}`;
  // Two records of one type side by side, path by path; of two types, the message names both.
  const sameType = m.recorded !== undefined && m.replayed !== undefined && RECORD_TYPE.exec(m.recorded)?.[1] === RECORD_TYPE.exec(m.replayed)?.[1];
  const diff =
    sameType && m.recorded !== undefined && m.replayed !== undefined
      ? (() => {
          try {
            return renderChanges(jsonChanges(JSON.parse(m.recorded as string) as JsonValue, JSON.parse(m.replayed as string) as JsonValue));
          } catch {
            return [`- ${m.recorded}`, `+ ${m.replayed}`];
          }
        })()
      : [];
  return {
    port: portOfLine(m.replayed ?? m.recorded),
    message: `the history differs at line ${m.line}: the transcript has ${recorded} there, the replay ${replayed}`,
    ...(diff.length > 0 ? { diff } : {}),
    line: m.line,
    ...(m.recorded !== undefined ? { recorded: m.recorded } : {}),
    ...(m.replayed !== undefined ? { replayed: m.replayed } : {}),
  };
}

const RECORD_TYPE = /^\{"type":"([a-z]+)"/;
const EVENT_SEQ = /^\{"type":"event","seq":(\d+),/;

/** Whether a mismatch is one event, in its place (the same seq), that the replay emitted otherwise. */
export function sameEvent(m: Mismatch): boolean {
  const recorded = m.recorded === undefined ? undefined : EVENT_SEQ.exec(m.recorded)?.[1];
  return recorded !== undefined && m.replayed !== undefined && EVENT_SEQ.exec(m.replayed)?.[1] === recorded;
}

/**
 * A stream cancelled while read is recorded as the provider saw it: ended by its own `cancelled`
 * error when it noticed the cancel first (a served run's provider, reading the signal), or let go by
 * the loop. A replay's provider cannot see the cancel, so the loop lets it go: the same response.
 */
export function cancelledAlike(recorded: string, replayed: string): boolean {
  if (!recorded.startsWith('{"type":"llm"') || !replayed.includes('"interrupted":true')) return false;
  const a = JSON.parse(recorded) as { error?: { code?: string }; interrupted?: boolean };
  const b = JSON.parse(replayed) as { error?: unknown; interrupted?: boolean };
  if (a.error?.code !== 'cancelled' || b.interrupted !== true || b.error !== undefined) return false;
  delete a.error;
  delete b.interrupted;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A divergence at a line, with the transcript's line there and what the replay wrote there when it differs. */
export function withBothSides(d: PortDivergence, strict: StrictLog): PortDivergence {
  if (d.line === undefined || (d.recorded !== undefined && d.replayed !== undefined)) return d;
  const recorded = d.recorded ?? strict.textAt(d.line);
  const written = d.replayed ?? strict.writtenAt(d.line);
  const replayed = written !== recorded ? written : undefined;
  return { ...d, ...(recorded !== undefined ? { recorded } : {}), ...(replayed !== undefined ? { replayed } : {}) };
}
