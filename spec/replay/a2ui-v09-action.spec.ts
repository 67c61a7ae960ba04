import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { A2UI_SURFACE_ACTIVITY } from '../../src/contract/a2ui.ts';
import { deserialiseEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { decodeAgUiInput } from '../../src/protocols/ag-ui/request.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { recordRun } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { readTranscript, type Header } from '../../src/replay/transcript.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';

/**
 * Corpus run 48: the thread's second run, after a first that drew an A2UI v0.9 surface whose Button
 * sends an event. The click comes as the one user message the AG-UI decoder makes of
 * `forwardedProps.a2uiAction`, the first run's thread is the history the run loads from its store,
 * and the model answers with a surface of its own and a sentence.
 */
const file = resolve(import.meta.dirname, '../../fixtures/runs/48-a2ui-v09-action.jsonl');
const text = readFileSync(file, 'utf8');
const lines = readTranscript(text).flatMap((l) => (l.ok ? [l.record] : []));
const header = lines[0] as Header;
const events = lines.flatMap((r) => (r.type === 'event' ? [deserialiseEvent(JSON.stringify(r.event))] : []));

describe('corpus run 48-a2ui-v09-action', () => {
  it('runs on the thread a first run left: its history holds that run’s render_a2ui call, a Button whose action is an event', () => {
    expect(header.plugins).toEqual([{ id: 'generative-ui' }]);
    expect(header.request.thread_id).toBe('a2ui-order');
    const history = header.request.history ?? [];
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const call = history[1]?.tool_calls?.[0];
    expect(call?.name).toBe('render_a2ui');
    const components = JSON.stringify(call?.arguments);
    expect(components).toContain('"component":"Button"');
    expect(components).toContain('"action":{"event":{"name":"order.submit"');
  });

  it('is asked the user message the AG-UI decoder makes of the click, word for word', () => {
    const userAction = { name: 'order.submit', surfaceId: 'order-form-1', sourceComponentId: 'submit', context: { name: 'Ada Lovelace' } };
    const decoded = decodeAgUiInput({ threadId: 'a2ui-order', runId: 'client-run-2', messages: [], forwardedProps: { a2uiAction: { userAction } } }, 0);
    if (!decoded.ok) throw new Error('the decoder refused the click');
    const [click] = decoded.value.messages;
    expect(header.request.messages).toEqual([{ ...click?.message, id: click?.id }]);
    expect(header.request.messages[0]?.content).toEqual([
      { type: 'text', text: 'User performed action "order.submit" on surface "order-form-1" (component: submit). Context: {"name":"Ada Lovelace"}' },
    ]);
  });

  it('answers with an a2ui-surface activity and a sentence, under ids the history does not hold (a deterministic environment, every draw checked)', () => {
    expect(header.env).toEqual({ kind: 'deterministic', start: 1_700_000_000_000, tick: 0 });
    expect(events[0]).toMatchObject({ event_type: 'run_start', thread_id: 'a2ui-order', run_id: 'run-1' });
    expect(events.some((e) => e.event_type === 'activity_snapshot' && e.activity_type === A2UI_SURFACE_ACTIVITY)).toBe(true);
    expect(events.at(-1)).toMatchObject({ event_type: 'run_finish', termination: { type: 'natural_end' } });
    const ids = new Set((header.request.history ?? []).map((m) => m.id));
    const steps = events.flatMap((e) => (e.event_type === 'step_start' ? [e.message_id] : []));
    expect(steps).toHaveLength(2);
    for (const id of steps) expect(ids.has(id)).toBe(false);
  });
});

describe('a recording on a thread a store holds (RecordingSetup.request.history)', () => {
  it('loads the history from a store, writes it in the header, and replays identical', async () => {
    const history = [Messages.user('hello', { id: 'm-1' }), Messages.assistant('hi', { id: 'm-2' })];
    const { transcript } = await recordRun({
      agent: { id: 'a', model: 'm', system_prompt: 'You answer.' },
      models: { m: { provider: 'p', model_name: 'scripted' } },
      providers: { p: new ScriptedLlm([{ text: 'Again.' }]) },
      tools: [],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 0 } },
      request: { threadId: 't-1', history, messages: [Messages.user('once more', { id: 'm-3' })] },
    });
    const records = readTranscript(transcript).flatMap((l) => (l.ok ? [l.record] : []));
    expect((records[0] as Header).request.history).toEqual(history);
    const llm = records.find((r) => r.type === 'llm') as { request: { messages: { role: string }[] } };
    expect(llm.request.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    const end = records.at(-1) as { messages: { id?: string }[] };
    expect(end.messages.map((m) => m.id).slice(0, 3)).toEqual(['m-1', 'm-2', 'm-3']);
    const report = await replayTranscript(transcript);
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
  });
});
