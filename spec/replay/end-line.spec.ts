import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/contract/message.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { endRecordOf, EndRecordSchema, RequestChain, type EndRecord } from '../../src/replay/transcript.ts';
import { conversation } from '../support/conversations.ts';

/**
 * A replay compares how its run ended with the transcript's `end` line as a line: the record on it
 * is read only when the two differ, and then every way the line can be wrong is reported as before.
 */
const text = readFileSync(join(import.meta.dirname, '../../fixtures/runs/03-one-tool.jsonl'), 'utf8');
const lines = text.split('\n');
const at = lines.findIndex((l) => l.startsWith('{"type":"end"'));
const line = at + 1;
const edited = (f: (l: string) => string): string => lines.map((l, i) => (i === at ? f(l) : l)).join('\n');

async function endOf(t: string): Promise<unknown> {
  const r = await replayTranscript(t);
  const d = r.divergence;
  return { identical: r.identical, at: r.at, divergence: d && { port: d.port, kind: d.kind, message: d.message, fields: d.fields } };
}

describe('the end line of a replay', () => {
  it('the same line: identical', async () => {
    expect(await endOf(text)).toEqual({ identical: true, at: undefined, divergence: undefined });
  });

  it.each([
    [
      'a field the schema refuses',
      edited((l) => l.replace('"steps":2', '"steps":-1')),
      { kind: 'unreadable_record', message: `transcript line ${line} is not a valid end record: result.steps: Too small: expected number to be >=0` },
    ],
    [
      'keys out of order',
      edited((l) => {
        const o = JSON.parse(l) as Record<string, unknown>;
        return JSON.stringify({ result: o['result'], type: 'end', messages: o['messages'] });
      }),
      { kind: 'unreadable_record', message: `transcript line ${line} is not a valid end record: the record is not in canonical form` },
    ],
    [
      'not JSON',
      edited((l) => l.slice(0, -1)),
      {
        kind: 'unreadable_record',
        message: `transcript line ${line} is not a valid end record: not JSON: Expected ',' or '}' after property value in JSON at position 549`,
      },
    ],
    [
      'another number of steps',
      edited((l) => l.replace('"steps":2', '"steps":3')),
      { kind: 'result_changed', fields: ['steps'], message: 'the run ended with another result than recorded: steps' },
    ],
    [
      'another response',
      edited((l) => l.replace('The echo said ping.","steps"', 'The echo said pong.","steps"')),
      { kind: 'result_changed', fields: ['response'], message: 'the run ended with another result than recorded: response' },
    ],
  ])('%s: reported on its line, as the record on it', async (_, t, divergence) => {
    expect(await endOf(t)).toEqual({
      identical: false,
      at: { line, record: 'end' },
      divergence: { port: 'end', fields: undefined, ...divergence },
    });
  });

  it('another message the run ended with: reported on its line, naming the message', async () => {
    const t = edited((l) => l.replace('"text":"scenario: one-tool"', '"text":"scenario: two-tools"'));
    expect(await endOf(t)).toEqual({
      identical: false,
      at: { line, record: 'end' },
      divergence: { port: 'end', kind: undefined, fields: undefined, message: 'the run ended with another message #0 (user) than recorded' },
    });
  });

  it('an end line where the header should be: reported as not a header, with why it is no record', async () => {
    const t = [lines[at]?.replace('"steps":2', '"steps":-1'), ...lines.filter((_, i) => i !== at)].join('\n');
    expect(await endOf(t)).toEqual({
      identical: false,
      at: { line: 1, record: 'header' },
      divergence: {
        port: 'transcript',
        kind: undefined,
        fields: undefined,
        message: 'line 1 is not a header: result.steps: Too small: expected number to be >=0 (expected format awaken-transcript/12)',
      },
    });
  });

  it('a line that begins as an end line but whose JSON says otherwise (a later "type" key wins) is read as what it says', async () => {
    const llm = lines.findIndex((l) => l.startsWith('{"type":"llm"'));
    const t = lines.map((l, i) => (i === llm ? l.replace(/^\{/, '{"type":"end",') : l)).join('\n');
    expect(await endOf(t)).toEqual({
      identical: false,
      at: { line: llm + 1, record: 'llm' },
      divergence: {
        port: 'llm',
        kind: 'unreadable_record',
        fields: undefined,
        message: `request #1: transcript line ${llm + 1} is not a valid record: the record is not in canonical form`,
      },
    });
  });

  it('a second end line: reported on it', async () => {
    const t = [...lines.slice(0, line), lines[at], ...lines.slice(line)].join('\n');
    expect(await endOf(t)).toEqual({
      identical: false,
      at: { line: line + 1, record: 'end' },
      divergence: {
        port: 'end',
        kind: 'unreadable_record',
        fields: undefined,
        message: `transcript line ${line + 1} is not a valid end record: a second end record`,
      },
    });
  });
});

describe('endRecordOf', () => {
  const resultOf = (record: EndRecord) => ({
    response: record.result.response,
    steps: record.result.steps,
    termination: record.result.termination,
    usage: record.result.usage,
    inferenceErrors: record.result.inference_errors,
  });
  const whole = (record: EndRecord, messages: readonly unknown[]): string =>
    JSON.stringify(EndRecordSchema.parse({ type: 'end', result: { ...record.result }, messages }));

  it('writes what the schema gives the whole record, for every corpus run: messages a request took before, messages in another key order, messages never sent', () => {
    const dir = join(import.meta.dirname, '../../fixtures/runs');
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.jsonl'))) {
      const endLine = readFileSync(join(dir, file), 'utf8')
        .split('\n')
        .find((l) => l.startsWith('{"type":"end"')) as string;
      const record = EndRecordSchema.parse(JSON.parse(endLine));
      // Every message as a new object with its keys reversed: its canonical form is the schema's, whatever order it came in.
      const reversed = record.messages.map((m) => Object.fromEntries(Object.entries(m).reverse()) as Message);
      // Half of them taken by a request first, as the loop's requests take them.
      new RequestChain().next({ model: 'm', messages: reversed.filter((_, i) => i % 2 === 0), tools: [] });
      expect(JSON.stringify(endRecordOf(resultOf(record), reversed)), file).toBe(whole(record, reversed));
      expect(JSON.stringify(endRecordOf(resultOf(record), reversed)), file).toBe(endLine);
    }
  });

  it('property: the same line as the schema gives, for any conversation, whichever of its messages a request took first', () => {
    const record = EndRecordSchema.parse(JSON.parse(lines[at] as string));
    fc.assert(
      fc.property(conversation(12), fc.array(fc.boolean(), { maxLength: 80 }), (messages, taken) => {
        new RequestChain().next({ model: 'm', messages: messages.filter((_, i) => taken[i] === true), tools: [] });
        expect(JSON.stringify(endRecordOf(resultOf(record), messages))).toBe(whole(record, messages));
      }),
      { numRuns: 200 },
    );
  });

  it('a message changed in place after a request took it is written as it is at the end, as a recording made before wrote it', () => {
    const record = EndRecordSchema.parse(JSON.parse(lines[at] as string));
    const m: Message = { id: 'm1', role: 'assistant', content: [{ type: 'text', text: 'hi' }] };
    new RequestChain().next({ model: 'm', messages: [m], tools: [] });
    (m.content[0] as { text: string }).text = 'changed';
    expect(JSON.stringify(endRecordOf(resultOf(record), [m]))).toBe(whole(record, [m]));
    expect(endRecordOf(resultOf(record), [m]).messages[0]?.content).toEqual([{ type: 'text', text: 'changed' }]);
  });

  it('a message the schema refuses: the error the schema gives the whole record, with the path from the record', () => {
    const record = EndRecordSchema.parse(JSON.parse(lines[at] as string));
    const messages = [...record.messages, { id: 'x', role: 'nobody', content: [] } as unknown as Message];
    const expected = EndRecordSchema.safeParse({ type: 'end', result: { ...record.result }, messages });
    expect(expected.success).toBe(false);
    expect(() => endRecordOf(resultOf(record), messages)).toThrow(expected.error?.message);
    expect(expected.error?.issues[0]?.path[0]).toBe('messages');
  });
});
