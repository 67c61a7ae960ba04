import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { z } from 'zod';
import { describe, expect, it, vi } from 'vitest';
import { type Message, Messages } from '../../src/contract/message.ts';
import type { StreamPart } from '../../src/contract/stream.ts';
import { type ToolDescriptor, ToolDescriptors, ToolResults } from '../../src/contract/tool.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { applyDeltas, chainDigest, RequestChain, type RequestDelta } from '../../src/replay/transcript.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { isAppendOnly, markAppendOnly } from '../../src/runtime/append-only.ts';
import { defineTool } from '../../src/runtime/tool.ts';

/**
 * A request is written as its change from the one before (`RequestChain`). The loop sends one array
 * of messages for a whole run and only appends to it; a chain that meets that array again reads only
 * what was appended, so a run of n steps costs n, not n², to record and to replay.
 */

/** An array whose entries count their reads: how much of it a chain looks at. */
function counted(entries: Message[]): { list: Message[]; reads: () => number } {
  let reads = 0;
  const list = new Proxy(entries, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
      return Reflect.get(target, key, receiver);
    },
  });
  return {
    list,
    reads: () => {
      const n = reads;
      reads = 0;
      return n;
    },
  };
}

describe('a chain of requests over an array that only grows', () => {
  it('marks an array for itself alone: no key, symbol or field any reader sees; a copy is unmarked; marking twice is one mark', () => {
    const list = [Messages.user('go')];
    const plain = [Messages.user('go')];
    expect(isAppendOnly(list)).toBe(false);
    markAppendOnly(list);
    markAppendOnly(list);
    expect(isAppendOnly(list)).toBe(true);
    expect(Reflect.ownKeys(list)).toEqual(Reflect.ownKeys(plain));
    expect(list).toStrictEqual(plain);
    expect(JSON.stringify(list)).toBe(JSON.stringify(plain));
    expect(isAppendOnly([...list])).toBe(false);
    expect(isAppendOnly(plain)).toBe(false);
    // What a request of a hand-written transcript may hold instead of a list: not marked, and no throw.
    for (const odd of ['', null, undefined, 3]) expect(isAppendOnly(odd as unknown as object[])).toBe(false);
  });

  it('reads only the entries appended since its last request', () => {
    const { list, reads } = counted([Messages.system('be brief'), Messages.user('go')]);
    markAppendOnly(list);
    const chain = new RequestChain();
    chain.next({ model: 'm', messages: list, tools: [] });
    expect(reads()).toBe(2);
    for (let step = 0; step < 50; step++) {
      list.push(Messages.assistant(`a${step}`), Messages.user(`q${step}`));
      const { delta } = chain.next({ model: 'm', messages: list, tools: [] });
      expect({ read: reads(), kept: delta.kept, added: delta.messages.length }).toEqual({ read: 2, kept: list.length - 2, added: 2 });
    }
  });

  it('reads the whole array again when it is not marked as only growing', () => {
    const { list, reads } = counted([Messages.user('go')]);
    const chain = new RequestChain();
    chain.next({ model: 'm', messages: list, tools: [] });
    reads();
    list.push(Messages.assistant('a'), Messages.user('q'));
    chain.next({ model: 'm', messages: list, tools: [] });
    expect(reads()).toBe(3);
  });

  /** One thing that happens between two requests. */
  type Move =
    | { kind: 'append'; texts: string[]; call: boolean }
    | { kind: 'change-arguments'; which: number; text: string }
    | { kind: 'ask'; tools: number[]; overrides: { temperature?: number; max_tokens?: number } | undefined }
    | { kind: 'ask-copy'; replace: number | undefined; cut: number | undefined; extra: string | undefined }
    | { kind: 'ask-refused'; copy: boolean }
    | { kind: 'new-list'; keep: number }
    | { kind: 'reshape'; tool: number; property: string };
  const text = fc.string({ maxLength: 3 });
  const move: fc.Arbitrary<Move> = fc.oneof(
    // Sometimes a tool call after them, its arguments an object the test keeps.
    fc.record({ kind: fc.constant('append' as const), texts: fc.array(text, { maxLength: 3 }), call: fc.boolean() }),
    // A tool call's arguments changed in place, after the message was sent.
    fc.record({ kind: fc.constant('change-arguments' as const), which: fc.nat(), text }),
    // The tools offered, by position in a pool; past the pool's end, a copy of one (the same text, another object).
    // With overrides sometimes, given in another key order than the schema's.
    fc.record({
      kind: fc.constant('ask' as const),
      tools: fc.array(fc.nat({ max: 5 }), { maxLength: 4 }),
      overrides: fc.option(
        fc.record({ max_tokens: fc.nat({ max: 9 }), temperature: fc.double({ noNaN: true, noDefaultInfinity: true }) }, { requiredKeys: [] }),
        {
          nil: undefined,
        },
      ),
    }),
    // A request transform's copy of the list: an entry replaced, the list cut short or grown.
    fc.record({
      kind: fc.constant('ask-copy' as const),
      replace: fc.option(fc.nat(), { nil: undefined }),
      cut: fc.option(fc.nat(), { nil: undefined }),
      extra: fc.option(text, { nil: undefined }),
    }),
    // A request the schemas refuse (overrides with a key they do not know): it must change nothing.
    fc.record({ kind: fc.constant('ask-refused' as const), copy: fc.boolean() }),
    // Another array that only grows, starting with some of the same messages (a handoff's).
    fc.record({ kind: fc.constant('new-list' as const), keep: fc.nat() }),
    // A tool's parameters changed in place, between two requests offering the same descriptor.
    fc.record({ kind: fc.constant('reshape' as const), tool: fc.nat({ max: 2 }), property: text }),
  );

  /** What a chain answers, or the error it throws. */
  const answer = (chain: RequestChain, r: Parameters<RequestChain['next']>[0]): unknown => {
    try {
      return chain.next(r);
    } catch (e) {
      return { refused: (e as Error).name };
    }
  };

  it('property: gives every request the change and digest a chain that reads every entry gives, and the changes add up to the request', () => {
    fc.assert(
      fc.property(fc.array(move, { maxLength: 30 }), (moves) => {
        let list: Message[] = [Messages.user('go')];
        markAppendOnly(list);
        const [fast, full] = [new RequestChain(), new RequestChain()];
        const deltas: RequestDelta[] = [];
        const digests: string[] = [];
        const calls: { text: string }[] = [];
        const pool = ['a', 'b', 'c'].map((id) => ToolDescriptors.new(id, id, `tool ${id}`));
        let tools: ToolDescriptor[] = [];
        const ask = (messages: Message[], overrides?: unknown): void => {
          const r = { model: 'm', messages, tools, ...(overrides !== undefined ? { overrides } : {}) };
          const answered = answer(fast, r);
          expect(answered).toEqual(answer(full, { ...r, messages: [...messages], tools: structuredClone(tools) }));
          if ('refused' in (answered as object)) return;
          const { delta, digest } = answered as { delta: RequestDelta; digest: string };
          // The digest is over the change as writing it out now gives it.
          expect(digest).toBe(chainDigest(deltas.length === 0 ? null : (digests.at(-1) as string), delta));
          digests.push(digest);
          deltas.push(delta);
          expect(applyDeltas(deltas).at(-1)).toEqual({ model: 'm', messages, tools, ...(overrides !== undefined ? { overrides } : {}) });
        };
        for (const m of moves) {
          if (m.kind === 'append') {
            list.push(...m.texts.map((t) => Messages.user(t)));
            if (m.call) {
              const args = { text: `call ${calls.length}` };
              calls.push(args);
              list.push(Messages.assistantWithToolCalls('', [{ id: `c${calls.length}`, name: 'a', arguments: args }]));
            }
          } else if (m.kind === 'change-arguments') {
            const args = calls[m.which % Math.max(calls.length, 1)];
            if (args !== undefined) args.text = m.text;
          } else if (m.kind === 'ask') {
            tools = m.tools.map((i) => pool[i] ?? structuredClone(pool[i % pool.length] as ToolDescriptor));
            ask(list, m.overrides);
          } else if (m.kind === 'ask-refused') ask(m.copy ? [Messages.user('elsewhere'), ...list] : list, { unknown_setting: 1 });
          else if (m.kind === 'reshape') {
            const parameters = (pool[m.tool] as ToolDescriptor).parameters as { properties: Record<string, unknown> };
            parameters.properties[`p${m.property}`] = { type: 'string' };
          } else if (m.kind === 'new-list') {
            list = list.slice(0, m.keep % (list.length + 1));
            markAppendOnly(list);
          } else {
            let copy = [...list];
            if (m.replace !== undefined && copy.length > 0) copy[m.replace % copy.length] = Messages.assistant('replaced');
            if (m.cut !== undefined) copy = copy.slice(0, m.cut % (copy.length + 1));
            if (m.extra !== undefined) copy.push(Messages.user(m.extra));
            ask(copy);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('what a chain gives for a request', () => {
  it('takes an object offered as a tool and sent as a message in the canonical form of each, whichever it met first', () => {
    for (const toolFirst of [true, false]) {
      const both = { id: 'x', name: 'n', description: 'd', parameters: {}, role: 'user', content: [{ type: 'text', text: 'hi' }] };
      const chain = new RequestChain();
      const first = chain.next(toolFirst ? { model: 'm', messages: [], tools: [both] } : { model: 'm', messages: [both], tools: [] });
      const { delta } = chain.next({ model: 'm', messages: [both, Messages.user('next')], tools: [both] });
      const request = applyDeltas([first.delta, delta]).at(-1);
      expect(request?.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'hi' }], id: 'x' });
      expect(request?.tools).toEqual([{ id: 'x', name: 'n', description: 'd', parameters: {} }]);
    }
  });

  it('gives the digest of the change as written out, whatever the model is (a transform may cast anything there)', () => {
    for (const model of [undefined, 5, { toJSON: (key: string) => `model at ${key}` }, 'm']) {
      const { delta, digest } = new RequestChain().next({ model: model as string, messages: [Messages.user('go')], tools: [] });
      expect(digest).toBe(chainDigest(null, delta));
    }
  });
});

describe('the array a run sends', () => {
  const echo = defineTool({
    id: 'echo',
    description: 'echo',
    args: z.object({ text: z.string() }),
    execute: ({ text }) => ToolResults.success('echo', { echoed: text }),
  });
  const parts = (k: number, calls: number): StreamPart[] =>
    k < calls
      ? [
          { type: 'tool_call_start', id: `c${k}`, name: 'echo' },
          { type: 'tool_call_delta', id: `c${k}`, args_delta: `{"text":"t${k}"}` },
          { type: 'finish', stop_reason: 'ToolUse' },
        ]
      : [
          { type: 'text_delta', delta: 'done' },
          { type: 'finish', stop_reason: 'EndTurn' },
        ];

  it('property: is one array a run, marked as only growing, whose entries sent once stay where they were', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 8 }), fc.boolean(), async (calls, prompt) => {
        const seen: { list: readonly Message[]; entries: Message[] }[] = [];
        let k = 0;
        const built = new AgentRuntimeBuilder()
          .withEnv(deterministicEnv())
          .withProvider('p', {
            name: 'p',
            stream: (request) => {
              seen.push({ list: request.messages, entries: [...request.messages] });
              const mine = parts(k++, calls);
              return (async function* () {
                yield* mine;
              })();
            },
          })
          .withModel('m', { provider: 'p', model_name: 'p' })
          .withAgentSpec({ id: 'a', model: 'm', ...(prompt ? { system_prompt: 'be brief' } : {}) })
          .withTool(echo)
          .build();
        if (!built.ok) throw new Error(JSON.stringify(built.error));
        const r = await built.value.run({ messages: [Messages.user('go')] }, { emit: () => undefined });
        expect(r.ok && r.value.steps).toBe(calls + 1);
        const list = seen[0]?.list as readonly Message[];
        expect(isAppendOnly(list)).toBe(true);
        for (const { list: sent, entries } of seen) {
          expect(sent).toBe(list);
          // Every entry sent before is still in place, by identity.
          for (const [i, m] of entries.entries()) expect(list[i]).toBe(m);
        }
        expect(seen.map((s) => s.entries.length)).toEqual(Array.from({ length: calls + 1 }, (_, i) => (prompt ? 2 : 1) + 2 * i));
      }),
      { numRuns: 20 },
    );
  });
});

describe('a request taken by a replay', () => {
  it('is known to the chain that took it last, as that one object, with what the chain gave it', () => {
    const chain = new RequestChain();
    const first = { model: 'm', messages: [Messages.user('go')], tools: [] };
    const given = chain.next(first);
    expect(chain.taken(first)).toBe(given);
    // The same content in another object is another request.
    expect(chain.taken({ ...first })).toBeUndefined();
    const second = { model: 'm', messages: [Messages.user('go'), Messages.assistant('a'), Messages.user('q')], tools: [] };
    chain.next(second);
    expect(chain.taken(first)).toBeUndefined();
    expect(chain.taken(second)?.delta).toMatchObject({ kept: 1 });
  });

  it('has its change built once: by the recorder, whose digest the model port then reads', async () => {
    for (const name of ['03-one-tool', '05-parallel-tools-parallel-streaming', '25-retry-with-fallback-model', '41-delegation-local']) {
      const text = readFileSync(join(import.meta.dirname, '../../fixtures/runs', `${name}.jsonl`), 'utf8');
      const requests = text.split('\n').filter((l) => l.startsWith('{"type":"llm"')).length;
      const next = vi.spyOn(RequestChain.prototype, 'next');
      try {
        const report = await replayTranscript(text);
        expect({ name, identical: report.identical, built: next.mock.calls.length }).toEqual({ name, identical: true, built: requests });
      } finally {
        next.mockRestore();
      }
    }
  });
});
