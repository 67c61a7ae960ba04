import { EventEncoder } from '@ag-ui/encoder';
import { applyPatch, compare, deepClone, type Operation } from 'fast-json-patch';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { encodeAgUi, frameAgUi, initialAgUiState, requestAgUiState, transcodeAgUi, type AgUiEvent } from '../../src/protocols/ag-ui/encoder.ts';
import { judgeAgUi, type AgUiVerdict } from '../../src/protocols/ag-ui/judge.ts';
import { eventsOf, goldenOf, runEvents, streams } from '../support.ts';

type Msg = { role: string; content?: unknown; id: string; toolCallId?: string; toolCalls?: { id: string; function: { arguments: string } }[] };

/** What the client's messages, state and outcome must show, read from the event stream itself. */
function expectSameContent(events: readonly AgentEvent[], v: AgUiVerdict): void {
  // An `error` event is the end of the stream (what follows it is not sent).
  const last = events.find((e) => e.event_type === 'error') ?? events.at(-1);
  if (last?.event_type === 'error') {
    expect(v.runError).toBe(last.message);
    return;
  }
  if (last?.event_type === 'run_finish' && last.termination.type === 'error') {
    expect(v.runError).toBe(last.termination.value);
    return;
  }
  if (last?.event_type === 'run_finish') {
    const t = last.termination.type;
    expect(v.outcome).toBe(t === 'suspended' ? 'interrupt' : t === 'cancelled' ? 'cancelled' : 'success');
  }
  const messages = v.messages as Msg[];
  const textOf = (role: string): string => messages.map((m) => (m.role === role && typeof m.content === 'string' ? m.content : '')).join('');
  expect(textOf('assistant')).toBe(events.map((e) => (e.event_type === 'text_delta' ? e.delta : '')).join(''));
  expect(textOf('reasoning')).toBe(events.map((e) => (e.event_type === 'reasoning_delta' ? e.delta : '')).join(''));
  // Every tool call with the arguments the run streamed (or, unstreamed, its parsed arguments).
  const calls = new Map(messages.flatMap((m) => (m.toolCalls ?? []).map((c) => [c.id, c.function.arguments] as const)));
  const args = new Map<string, string>();
  for (const e of events) {
    if (e.event_type === 'tool_call_start') args.set(e.id, args.get(e.id) ?? '');
    if (e.event_type === 'tool_call_delta' && args.has(e.id)) args.set(e.id, (args.get(e.id) ?? '') + e.args_delta);
    if (e.event_type === 'tool_call_ready' && (args.get(e.id) ?? '') === '') args.set(e.id, JSON.stringify(e.arguments));
  }
  for (const [id, a] of args) expect(calls.get(id), id).toBe(a);
  // Every settled call has its result; a suspended, unsettled one is a pending interrupt.
  const results = new Map(messages.filter((m) => m.role === 'tool').map((m) => [m.toolCallId, m.content]));
  const pending = new Set<string>();
  for (const e of events) {
    if (e.event_type === 'tool_call_done' && e.outcome === 'suspended') pending.add(e.id);
    else if (e.event_type === 'tool_call_done') {
      pending.delete(e.id);
      expect(results.has(e.id), e.id).toBe(true);
    } else if (e.event_type === 'tool_call_resumed') {
      pending.delete(e.target_id);
      expect(results.get(e.target_id)).toBe(JSON.stringify(e.result));
    }
  }
  if (v.outcome === 'interrupt') expect(v.pendingInterrupts.map((i) => i.toolCallId).sort()).toEqual([...pending].sort());
}

describe('AG-UI 1.0 encoder, judged by @ag-ui/client and @ag-ui/core/schemas', () => {
  let warn: ReturnType<typeof vi.spyOn>;
  beforeEach(() => {
    // The judge collects the client's [ag-ui] repair warnings as problems; any other warning fails too.
    warn = vi.spyOn(console, 'warn');
  });
  afterEach(() => {
    expect(warn).not.toHaveBeenCalled();
    warn.mockRestore();
  });

  it.each(streams)('%s matches its golden frames byte for byte', (file) => {
    expect(frameAgUi(encodeAgUi(eventsOf(file)))).toBe(goldenOf('ag-ui', file));
  });

  it.each(streams)('%s passes the judge and carries the stream content', async (file) => {
    const events = eventsOf(file);
    const v = await judgeAgUi(frameAgUi(encodeAgUi(events)));
    expect(v.problems).toEqual([]);
    expectSameContent(events, v);
  });

  it.each(streams)('%s is framed exactly as the official EventEncoder frames it', (file) => {
    const encoded = encodeAgUi(eventsOf(file));
    const official = new EventEncoder();
    expect(frameAgUi(encoded)).toBe(encoded.map((e) => official.encodeSSE(e as never)).join(''));
  });

  it('the state the client builds from STATE_SNAPSHOT and STATE_DELTA is the stream state, on the state keys', async () => {
    const events = eventsOf('edge-state-and-activity-deltas.events.jsonl');
    let state: { extensions?: unknown } = {};
    for (const e of events) {
      if (e.event_type === 'state_snapshot') state = deepClone(e.snapshot);
      if (e.event_type === 'state_delta') state = applyPatch(state, e.delta as unknown as Operation[], false, false).newDocument;
    }
    const v = await judgeAgUi(frameAgUi(encodeAgUi(events)));
    expect(events.some((e) => e.event_type === 'state_delta')).toBe(true);
    expect(v.problems).toEqual([]);
    expect(v.state).toEqual(state.extensions);
  });

  it('property: snapshot and deltas on one root — the client state follows the runtime state keys exactly', async () => {
    const key = fc.constantFrom('todo', 'counter', 'notes', '__runtime.run_lifecycle');
    const value = fc.oneof(fc.integer(), fc.string(), fc.record({ items: fc.array(fc.string(), { maxLength: 4 }), done: fc.boolean() }));
    const extensions = fc.dictionary(key, value, { maxKeys: 4 });
    await fc.assert(
      fc.asyncProperty(extensions, fc.array(extensions, { minLength: 1, maxLength: 5 }), async (first, later) => {
        // The runtime's documents, a snapshot first and then each change as a patch on the document.
        const docs = [first, ...later].map((ext, i) => ({ revision: i + 1, extensions: ext }));
        const events: AgentEvent[] = [
          { event_type: 'run_start', thread_id: 't', run_id: 'r' },
          { event_type: 'state_snapshot', snapshot: docs[0] as never },
          ...docs.slice(1).map((d, i): AgentEvent => ({ event_type: 'state_delta', delta: compare(docs[i] as object, d) as never })),
          { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } },
        ];
        const v = await judgeAgUi(frameAgUi(encodeAgUi(events)));
        expect(v.problems).toEqual([]);
        expect(v.state).toEqual(docs.at(-1)?.extensions);
      }),
      { numRuns: 60 },
    );
  });

  it('RUN_STARTED and RUN_FINISHED carry the run id the client chose; a resumed run announces none of its calls again', () => {
    const state = requestAgUiState({
      clientRunId: 'client-2',
      resumed: { runId: 'r', calls: [{ callId: 'c1', name: 'confirm_action', arguments: { action: 'x' } }] },
    });
    const events: AgentEvent[] = [
      { event_type: 'run_start', thread_id: 't', run_id: 'r' },
      { event_type: 'tool_call_resumed', target_id: 'c1', result: { confirmed: 'x' } },
      { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } },
    ];
    let s = state;
    const out: AgUiEvent[] = [];
    for (const e of events) {
      const [next, emitted] = transcodeAgUi(s, e);
      s = next;
      out.push(...emitted);
    }
    expect(out.map((e) => e.type)).toEqual(['RUN_STARTED', 'TOOL_CALL_RESULT', 'RUN_FINISHED']);
    expect(out[0]?.['runId']).toBe('client-2');
    expect(out[2]?.['runId']).toBe('client-2');
    expect(out.some((e) => e['toolCallName'] === 'tool')).toBe(false);
  });

  it('a suspension ends the run with an interrupt outcome naming the call, its reason and response schema', () => {
    const schema = { type: 'object', properties: { approved: { type: 'boolean' } } };
    const events: AgentEvent[] = [
      { event_type: 'run_start', thread_id: 't', run_id: 'r' },
      { event_type: 'tool_call_ready', id: 'c1', name: 'wipe', arguments: { db: 'prod' } },
      {
        event_type: 'tool_call_done',
        id: 'c1',
        message_id: 'm2',
        outcome: 'suspended',
        result: {
          tool_name: 'wipe',
          status: 'pending',
          data: null,
          message: null,
          suspension: {
            suspension: { id: 'ask-c1', action: 'approval-required', message: 'Wipe prod?', response_schema: schema },
            pending: { id: 'c1', name: 'wipe', arguments: { db: 'prod' } },
            resume_mode: 'replay_tool_call',
          },
        },
      },
      { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'suspended' } },
    ];
    expect(encodeAgUi(events).at(-1)).toEqual({
      type: 'RUN_FINISHED',
      threadId: 't',
      runId: 'r',
      outcome: {
        type: 'interrupt',
        interrupts: [
          {
            id: 'ask-c1',
            reason: 'approval-required',
            toolCallId: 'c1',
            message: 'Wipe prod?',
            responseSchema: schema,
            metadata: { pendingTool: { name: 'wipe', arguments: { db: 'prod' } }, resumeMode: 'replay_tool_call' },
          },
        ],
      },
    });
  });

  it('reasoning is its own message, on an id distinct from the text', () => {
    const out = encodeAgUi(eventsOf('run-reasoning.events.jsonl'));
    const ids = (type: string): unknown[] => out.filter((e) => e.type === type).map((e) => e['messageId']);
    expect(ids('REASONING_START').length).toBeGreaterThan(0);
    expect(ids('REASONING_START')).toEqual(ids('REASONING_END'));
    for (const id of ids('REASONING_MESSAGE_START')) expect(ids('TEXT_MESSAGE_START')).not.toContain(id);
  });

  it.each([
    [
      'CONTENT before START',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'x' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
    [
      'an event after RUN_FINISHED',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
        { type: 'STEP_STARTED', stepName: 's' },
      ],
    ],
    [
      'RUN_FINISHED with an open text message',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
    [
      'RUN_FINISHED with an open tool call',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'TOOL_CALL_START', toolCallId: 'c', toolCallName: 'x' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
    [
      'RUN_FINISHED with open reasoning',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'REASONING_START', messageId: 'm' },
        { type: 'REASONING_MESSAGE_START', messageId: 'm', role: 'reasoning' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
    [
      'an interrupt outcome with no interrupts',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r', outcome: { type: 'interrupt', interrupts: [] } },
      ],
    ],
    [
      'an unknown event type',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'TEXT_MESSAGE_DELTA', messageId: 'm', delta: 'x' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
    [
      'an unknown key',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r', extra: 1 },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
    [
      'a bad role',
      'data',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'robot' },
        { type: 'TEXT_MESSAGE_END', messageId: 'm' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
    [
      'CRLF framing',
      'crlf',
      [
        { type: 'RUN_STARTED', threadId: 't', runId: 'r' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
    [
      'a first event that is not RUN_STARTED',
      'data',
      [
        { type: 'STEP_STARTED', stepName: 's' },
        { type: 'RUN_FINISHED', threadId: 't', runId: 'r' },
      ],
    ],
  ] as const)('the judge rejects %s (it is live)', async (_name, framing, events) => {
    const body = events.map((e) => `data: ${JSON.stringify(e)}${framing === 'crlf' ? '\r\n\r\n' : '\n\n'}`).join('');
    const v = await judgeAgUi(body);
    expect(v.problems.length).toBeGreaterThan(0);
  });

  it('closes open blocks, tool calls and the step, then ends with one RUN_ERROR when the events stop early', async () => {
    const events = eventsOf('edge-cancel-with-open-blocks.events.jsonl').slice(0, -1);
    const v = await judgeAgUi(frameAgUi(encodeAgUi(events)));
    expect(v.problems).toEqual([]);
    expect(v.events.at(-1)).toEqual({ type: 'RUN_ERROR', message: 'the event stream ended before the run finished', code: 'incomplete_stream' });
  });

  it('emits nothing after the terminal event but a new run, and nothing before the first', () => {
    let s = initialAgUiState();
    expect(transcodeAgUi(s, { event_type: 'text_delta', delta: 'early' })[1]).toEqual([]);
    [s] = transcodeAgUi(s, { event_type: 'run_start', thread_id: 't', run_id: 'r' });
    [s] = transcodeAgUi(s, { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } });
    expect(transcodeAgUi(s, { event_type: 'text_delta', delta: 'late' })[1]).toEqual([]);
    expect(transcodeAgUi(s, { event_type: 'run_start', thread_id: 't', run_id: 'r2' })[1]).toEqual([{ type: 'RUN_STARTED', threadId: 't', runId: 'r2' }]);
  });

  it('reports token usage of every inference on the terminal event', () => {
    const out: AgUiEvent[] = encodeAgUi([
      { event_type: 'run_start', thread_id: 't', run_id: 'r' },
      { event_type: 'inference_complete', model: 'm1', usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }, duration_ms: 1 },
      { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } },
    ]);
    expect(out.at(-1)?.['usage']).toEqual([{ model: 'm1', inputTokens: 3, outputTokens: 4, totalTokens: 7 }]);
  });

  it('property: the stream of any run passes the judge, closes every block and ends with one terminal event', async () => {
    await fc.assert(
      fc.asyncProperty(runEvents, async (run) => {
        const events = await run;
        const out = encodeAgUi(events);
        const v = await judgeAgUi(frameAgUi(out));
        expect(v.problems).toEqual([]);
        expect(out.filter((e) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR')).toHaveLength(1);
        expect(['RUN_FINISHED', 'RUN_ERROR']).toContain(out.at(-1)?.type);
        expectSameContent(events, v);
      }),
      { numRuns: 100 },
    );
  });
});
