import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { recordRun } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { defineTool } from '../../src/runtime/tool.ts';

/**
 * A transcript's history is strict: its records replay in the order they were written, across ports.
 * A record deleted, swapped with its neighbour or duplicated is reported at the first line where the
 * edited transcript and the one recorded differ (what the replay re-records is the recorded one up to
 * there), naming the port and both lines.
 */
const dir = resolve(import.meta.dirname, '../../fixtures/runs');
const corpus = readdirSync(dir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .map((file) => ({ file, lines: readFileSync(join(dir, file), 'utf8').trimEnd().split('\n') }));

type Kind = 'delete' | 'swap' | 'duplicate';

/** The lines after one structural edit of the record on line `i` (0-based, never the header). */
function edited(lines: readonly string[], i: number, kind: Kind): string[] {
  const out = [...lines];
  if (kind === 'delete') out.splice(i, 1);
  else if (kind === 'duplicate') out.splice(i + 1, 0, lines[i] as string);
  else [out[i], out[i + 1]] = [lines[i + 1] as string, lines[i] as string];
  return out;
}

/** The first line (1-based) where two transcripts differ. */
function firstDifferingLine(a: readonly string[], b: readonly string[]): number {
  let k = 0;
  while (k < a.length && k < b.length && a[k] === b[k]) k++;
  return k + 1;
}

const isTool = (line: string | undefined): boolean => line?.startsWith('{"type":"tool"') === true;
/** The port a line's record belongs to (an `ask` is the tool port's). */
const portOf = (line: string | undefined): string | undefined => {
  const type = line === undefined ? undefined : /^\{"type":"([a-z]+)"/.exec(line)?.[1];
  return type === 'ask' ? 'tool' : type;
};

/**
 * What the transcript cannot say, and where the replay reports it instead:
 * - two adjacent tool records are the outcomes of calls that settled together (a parallel batch):
 *   swapped, they are a history that could have been recorded (the replay settles the calls in the
 *   new order, and re-records it identical); one of them deleted is reported after the batch's
 *   other outcomes, since where among them it settled is not known;
 * - a cancel comes at any moment after the event it follows: swapped with a record the run writes
 *   before its next event (a draw, an outcome, a response), it is a history that could have been
 *   recorded too;
 * - a deleted cancel whose next records are what the run, not cancelled, does next anyway (clock
 *   readings) is reported where the two part, after such readings; which readings those are only
 *   the run knows, so either line is the expected one.
 */
function expectedLines(lines: readonly string[], changed: readonly string[], i: number, kind: Kind): readonly number[] | 'identical' {
  const first = firstDifferingLine(lines, changed);
  if (kind === 'swap' && isTool(lines[i]) && isTool(lines[i + 1])) return 'identical';
  if (kind === 'swap' && lines[i]?.startsWith('{"type":"cancel"') && /^\{"type":"(?:env|tool|ask|llm)"/.test(lines[i + 1] ?? '')) return 'identical';
  if (kind === 'delete' && isTool(lines[i]) && (isTool(lines[i - 1]) || isTool(lines[i + 1]))) {
    let k = i;
    while (isTool(changed[k])) k++;
    return [k + 1];
  }
  if (kind === 'delete' && lines[i]?.startsWith('{"type":"cancel"')) {
    let k = i;
    while (changed[k]?.startsWith('{"type":"env"')) k++;
    return [first, k + 1];
  }
  return [first];
}

describe('a strict history', () => {
  it('property: a record deleted, swapped with the next or duplicated is reported at the first line it changed, naming the port and both sides', async () => {
    let tried = 0;
    const kinds = new Map<Kind, number>();
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: corpus.length - 1 }), fc.nat(), fc.constantFrom<Kind>('delete', 'swap', 'duplicate'), async (run, at, kind) => {
        const { file, lines } = corpus[run] as (typeof corpus)[number];
        const last = kind === 'swap' ? lines.length - 2 : lines.length - 1;
        const i = 1 + (at % last);
        const changed = edited(lines, i, kind);
        fc.pre(changed.join('\n') !== lines.join('\n'));
        tried++;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
        const expected = expectedLines(lines, changed, i, kind);
        const report = await replayTranscript(`${changed.join('\n')}\n`);
        const where = `${file}: ${kind} line ${i + 1}`;
        if (expected === 'identical') {
          expect(report.identical, where).toBe(true);
          return;
        }
        expect(report.identical, where).toBe(false);
        const line = report.at?.line ?? 0;
        expect(expected, where).toContain(line);
        expect(report.divergence?.line, where).toBe(line);
        // Both sides: the recording's line there (none past its end) and what the replay has there —
        // which only a replay that had ended before it lacks.
        const d = report.divergence;
        expect(d?.recorded, where).toBe(changed[line - 1]);
        if (d?.replayed === undefined) expect(report.termination, where).toBeDefined();
        expect(d?.replayed, where).not.toBe(d?.recorded);
        // The port: for a history that differs, of the record the replay has there (of the
        // transcript's once the replay ended); a record that contradicts itself there (its seq, its
        // digest) is the transcript's; else the port that found it (a response missing: llm).
        if (d?.message.startsWith('the history differs') === true) expect(d.port, where).toBe(portOf(d.replayed ?? d.recorded));
        else if (d?.port === 'transcript') expect(d.message, where).toMatch(/^line \d+: (event seq|inference seq|the recorded request)/);
        else expect(['env', 'llm', 'tool', 'decision', 'cancel', 'end'], where).toContain(d?.port);
      }),
      { numRuns: 2_400 },
    );
    expect(tried).toBeGreaterThanOrEqual(2_000);
    expect([...kinds.keys()].sort()).toEqual(['delete', 'duplicate', 'swap']);
  }, 600_000);

  it('every corpus run still replays identical', async () => {
    for (const { file, lines } of corpus) expect((await replayTranscript(`${lines.join('\n')}\n`)).identical, file).toBe(true);
  });
});

/**
 * A recorded parallel batch of `slow` (called first; it settles 20 ms later, streaming `stream`
 * first when given) and `quick` (settles at once): `quick`'s outcome is written first.
 */
async function slowThenQuick(mode: string, stream?: string): Promise<string> {
  const slow = defineTool({
    id: 'slow',
    description: 'answers late',
    args: z.object({}),
    execute: async (_args, ctx) => {
      await new Promise((r) => setTimeout(r, 20));
      if (stream !== undefined) await ctx.streamOutput(stream);
      return ToolResults.success('slow', 'late');
    },
  });
  const quick = defineTool({ id: 'quick', description: 'answers at once', args: z.object({}), execute: () => ToolResults.success('quick', 'early') });
  const { transcript } = await recordRun({
    agent: { id: 'a', model: 'm', sections: { tool_execution: { mode } } },
    models: { m: { provider: 'p', model_name: 'pm' } },
    providers: {
      p: new ScriptedLlm([
        {
          tool_calls: [
            { id: 'c1', name: 'slow', arguments: {} },
            { id: 'c2', name: 'quick', arguments: {} },
          ],
        },
        { text: 'both done' },
      ]),
    },
    tools: [slow, quick],
    env: { env: deterministicEnv({ start: 1_700_000_000_000, tick: 1 }), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 1 } },
    request: { messages: [Messages.user('go')] },
  });
  return transcript;
}

describe('calls that settle together', () => {
  it('settle on replay in the order recorded: a run whose calls settled out of model order replays identical', async () => {
    const transcript = await slowThenQuick('parallel_batch_approval');
    const lines = transcript.trimEnd().split('\n');
    const outcomes = lines.flatMap((l, i) => (l.startsWith('{"type":"tool"') ? [[i, (JSON.parse(l) as { call_id: string }).call_id] as const] : []));
    expect(outcomes.map(([, id]) => id)).toEqual(['c2', 'c1']);
    // Without the wait, the replay would settle c1 first and write its outcome where c2's is.
    expect(await replayTranscript(transcript)).toMatchObject({ identical: true });
  });
});

describe('what a run writes at its own moment', () => {
  it.each(['parallel_batch_approval', 'parallel_streaming'])('%s: a call reporting activity after another call settled replays identical', async (mode) => {
    const transcript = await slowThenQuick(mode, 'done\n');
    const kinds = transcript
      .trimEnd()
      .split('\n')
      .map((l) =>
        l.startsWith('{"type":"tool"') ? `tool ${(JSON.parse(l) as { call_id: string }).call_id}` : l.includes('tool_call_stream_delta') ? 'stream c1' : '',
      )
      .filter((k) => k !== '');
    // c2's outcome, then c1's report, then c1's outcome: the replay reports where the recording did.
    expect(kinds).toEqual(['tool c2', 'stream c1', 'tool c1']);
    expect(await replayTranscript(transcript)).toMatchObject({ identical: true });
  });
});
