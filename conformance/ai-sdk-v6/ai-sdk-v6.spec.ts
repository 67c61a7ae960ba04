import { UI_MESSAGE_STREAM_HEADERS as OFFICIAL_HEADERS } from 'ai';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentEvent } from '../../src/contract/event.ts';
import { encodeAiSdk, frameAiSdk, initialAiSdkState, transcodeAiSdk, UI_MESSAGE_STREAM_HEADERS } from '../../src/protocols/ai-sdk-v6/encoder.ts';
import { judgeAiSdk, type Verdict } from '../../src/protocols/ai-sdk-v6/judge.ts';
import { eventsOf, goldenOf, runEvents, streams } from '../support.ts';

/** What the final UI message must show, read from the event stream itself. */
function expectSameContent(events: readonly AgentEvent[], v: Verdict): void {
  // A failed run shows its error to the client (useChat's `error`); an `error` event is the end of the stream.
  const last = events.find((e) => e.event_type === 'error') ?? events.at(-1);
  const failure =
    last?.event_type === 'error' ? last.message : last?.event_type === 'run_finish' && last.termination.type === 'error' ? last.termination.value : undefined;
  if (failure !== undefined) {
    expect(v.streamError).toBe(failure);
    return;
  }
  expect(v.streamError).toBeUndefined();
  const message = v.message;
  expect(message).toBeDefined();
  if (message === undefined) return;
  const text = events.map((e) => (e.event_type === 'text_delta' ? e.delta : '')).join('');
  expect(message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('')).toBe(text);
  const reasoning = events.map((e) => (e.event_type === 'reasoning_delta' ? e.delta : '')).join('');
  expect(message.parts.map((p) => (p.type === 'reasoning' ? p.text : '')).join('')).toBe(reasoning);
  // Every tool call of the run, in its final state.
  const final = new Map<string, string>();
  for (const e of events) {
    if (e.event_type === 'tool_call_start') final.set(e.id, final.get(e.id) ?? 'input-streaming');
    if (e.event_type === 'tool_call_ready') final.set(e.id, 'input-available');
    if (e.event_type === 'tool_call_done')
      final.set(e.id, e.outcome === 'succeeded' ? 'output-available' : e.outcome === 'failed' ? 'output-error' : 'approval-requested');
    if (e.event_type === 'tool_call_resumed') {
      const r = e.result as { error?: unknown; approved?: unknown } | null;
      final.set(e.target_id, typeof r?.error === 'string' ? 'output-error' : r?.approved === false ? 'output-denied' : 'output-available');
    }
  }
  const parts = new Map(
    message.parts.filter((p) => p.type.startsWith('tool-')).map((p) => [(p as { toolCallId: string }).toolCallId, (p as { state: string }).state]),
  );
  for (const [id, state] of final) {
    // A call whose arguments never completed is closed when the run ends: the client shows an error, not a spinner.
    expect(parts.get(id)).toBe(state === 'input-streaming' ? 'output-error' : state);
  }
}

describe('AI SDK v6 encoder, judged by ai@6', () => {
  let errors: ReturnType<typeof vi.spyOn>;
  beforeEach(() => {
    // A judge that repairs silently would hide a bad stream: any console error fails the test.
    errors = vi.spyOn(console, 'error');
  });
  afterEach(() => {
    expect(errors).not.toHaveBeenCalled();
    errors.mockRestore();
  });

  it('sends the headers of ai UI_MESSAGE_STREAM_HEADERS', () => {
    expect(UI_MESSAGE_STREAM_HEADERS).toEqual(OFFICIAL_HEADERS);
  });

  it.each(streams)('%s matches its golden frames byte for byte', (file) => {
    expect(frameAiSdk(encodeAiSdk(eventsOf(file)))).toBe(goldenOf('ai-sdk-v6', file));
  });

  it.each(streams)('%s passes the judge and carries the stream content', async (file) => {
    const events = eventsOf(file);
    const v = await judgeAiSdk(frameAiSdk(encodeAiSdk(events)));
    expect(v.problems).toEqual([]);
    expectSameContent(events, v);
  });

  it.each([
    ['a delta before its start', [{ type: 'start' }, { type: 'text-delta', id: 't', delta: 'x' }, { type: 'finish' }]],
    ['an output for an unknown tool call', [{ type: 'start' }, { type: 'tool-output-available', toolCallId: 'nope', output: 1 }, { type: 'finish' }]],
    ['an unknown chunk type', [{ type: 'start' }, { type: 'text-begin', id: 'x' }, { type: 'finish' }]],
    ['a bad finish reason', [{ type: 'start' }, { type: 'finish', finishReason: 'done' }]],
    ['a chunk after the terminal chunk', [{ type: 'start' }, { type: 'finish' }, { type: 'start-step' }]],
    ['text after an error chunk', [{ type: 'start' }, { type: 'error', errorText: 'x' }, { type: 'text-start', id: 't' }, { type: 'finish' }]],
    ['no [DONE]', [{ type: 'start' }, { type: 'finish' }]],
  ])('the judge rejects %s (it is live)', async (name, chunks) => {
    const body = chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + (name === 'no [DONE]' ? '' : 'data: [DONE]\n\n');
    const v = await judgeAiSdk(body);
    expect(v.problems.length > 0 || v.streamError !== undefined).toBe(true);
  });

  it('closes open blocks and ends with one terminal frame even when the events stop early', async () => {
    const events = eventsOf('edge-cancel-with-open-blocks.events.jsonl').slice(0, -1);
    const v = await judgeAiSdk(frameAiSdk(encodeAiSdk(events)));
    expect(v.problems).toEqual([]);
    expect(v.chunks.at(-1)).toEqual({ type: 'finish', finishReason: 'other' });
  });

  it('emits nothing after the terminal frame but a new run', () => {
    let s = initialAiSdkState();
    [s] = transcodeAiSdk(s, { event_type: 'run_start', thread_id: 't', run_id: 'r' });
    [s] = transcodeAiSdk(s, { event_type: 'run_finish', thread_id: 't', run_id: 'r', termination: { type: 'natural_end' } });
    expect(transcodeAiSdk(s, { event_type: 'text_delta', delta: 'late' })[1]).toEqual([]);
    expect(transcodeAiSdk(s, { event_type: 'run_start', thread_id: 't', run_id: 'r2' })[1][0]).toEqual({ type: 'start', messageId: 'r2' });
  });

  it('property: the stream of any run passes the judge, closes every block and ends with one terminal frame', async () => {
    await fc.assert(
      fc.asyncProperty(runEvents, async (run) => {
        const events = await run;
        const v = await judgeAiSdk(frameAiSdk(encodeAiSdk(events)));
        expect(v.problems).toEqual([]);
        expectSameContent(events, v);
      }),
      { numRuns: 100 },
    );
  });
});
