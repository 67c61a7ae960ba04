import { describe, expect, it } from 'vitest';
import { AgentSpecSchema } from '../../src/contract/agent-spec.ts';
import type { JsonValue } from '../../src/contract/json.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { z } from 'zod';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import { StateStore } from '../../src/runtime/state-store.ts';
import { recordRun, recordingTool, TranscriptLog } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { harness } from '../support/runtime.ts';
import type { Tool, ToolCallContext } from '../../src/runtime/tool.ts';

/**
 * A tool recorded (`awaken record`, `serve --record`, a replay) is handed a context that stands for
 * its call's own: every field reads as the call's, every report reaches the call's, and what it
 * reported is written in its record.
 */
const Counter = defineStateKey<number, number>({ key: 'counter', init: () => 0, apply: (_, n) => n, codec: z.number() });
const agentSpec = AgentSpecSchema.parse({ id: 'a', model: 'm', system_prompt: '' });
const controller = new AbortController();

function callContext(reports: string[], signalReads: { n: number }): ToolCallContext {
  const snapshot = new StateStore().snapshot();
  return {
    callId: 'c1',
    toolName: 'probe',
    threadId: 't1',
    runId: 'r1',
    agentSpec,
    snapshot,
    get signal() {
      signalReads.n++;
      return controller.signal;
    },
    resume: { decision: { decision_id: 'd1', action: 'resume', result: { ok: 1 }, updated_at: 5 }, mode: 'use_decision_as_tool_result' },
    state: <V>(key: { key: string }) => (key.key === 'counter' ? 7 : undefined) as V,
    reportActivity: async (t, c) => void reports.push(`activity ${t} ${JSON.stringify(c)}`),
    reportActivityDelta: async (t, p) => void reports.push(`delta ${t} ${JSON.stringify(p)}`),
    reportProgress: async (s, m, p) => void reports.push(`progress ${s} ${m} ${p}`),
    streamOutput: async (d) => void reports.push(`output ${d}`),
  };
}

describe('the context a recorded tool is handed', () => {
  it("reads as the call's own, reports to the call's own, and has what it reported written in its record", async () => {
    const reports: string[] = [];
    const signalReads = { n: 0 };
    const ctx = callContext(reports, signalReads);
    let seen: Record<string, unknown> = {};
    const probe: Tool = {
      descriptor: { id: 'probe', name: 'probe', description: 'reads its context', parameters: { type: 'object' } },
      execute: async (_args: JsonValue, c: ToolCallContext) => {
        const readsBefore = signalReads.n;
        seen = {
          callId: c.callId,
          toolName: c.toolName,
          threadId: c.threadId,
          runId: c.runId,
          agentSpec: c.agentSpec,
          snapshot: c.snapshot,
          resume: c.resume,
          counter: c.state(Counter),
          signalReadLazily: readsBefore === 0,
          signal: c.signal,
        };
        await c.reportActivity('card', { a: 1 });
        await c.reportActivityDelta('card', [{ op: 'add', path: '/b', value: 2 }]);
        await c.reportProgress('running', 'half', 0.5);
        await c.reportProgress('done');
        await c.streamOutput('chunk');
        return ToolResults.success('probe', { ok: true });
      },
    };
    const log = new TranscriptLog();
    await recordingTool(probe, log).execute({ q: 1 }, ctx);
    expect(seen).toEqual({
      callId: 'c1',
      toolName: 'probe',
      threadId: 't1',
      runId: 'r1',
      agentSpec,
      snapshot: ctx.snapshot,
      resume: ctx.resume,
      counter: 7,
      signalReadLazily: true,
      signal: controller.signal,
    });
    expect(seen['snapshot']).toBe(ctx.snapshot);
    expect(reports).toEqual([
      'activity card {"a":1}',
      'delta card [{"op":"add","path":"/b","value":2}]',
      'progress running half 0.5',
      'progress done undefined undefined',
      'output chunk',
    ]);
    expect(JSON.parse(log.lines.at(-1) as string)).toEqual({
      type: 'tool',
      call_id: 'c1',
      name: 'probe',
      arguments: { q: 1 },
      resume: { decision_id: 'd1', action: 'resume', result: { ok: 1 }, updated_at: 5 },
      activity: [
        { method: 'activity', args: ['card', { a: 1 }] },
        { method: 'activity_delta', args: ['card', [{ op: 'add', path: '/b', value: 2 }]] },
        { method: 'progress', args: ['running', 'half', 0.5] },
        { method: 'progress', args: ['done', null, null] },
        { method: 'stream_output', args: ['chunk'] },
      ],
      result: { tool_name: 'probe', status: 'success', data: { ok: true }, message: null },
    });
  });

  it.each([
    ['Object.create', (c: ToolCallContext): ToolCallContext => Object.create(c) as ToolCallContext],
    ['a Proxy', (c: ToolCallContext): ToolCallContext => new Proxy(c, {})],
  ])("reads as the call's own through a wrapper the tool makes of it (%s)", async (_, wrap) => {
    const reports: string[] = [];
    const ctx = callContext(reports, { n: 0 });
    let seen: unknown;
    const probe: Tool = {
      descriptor: { id: 'probe', name: 'probe', description: 'wraps its context', parameters: { type: 'object' } },
      execute: async (_args, c) => {
        const w = wrap(c);
        seen = [
          w.callId,
          w.toolName,
          w.threadId,
          w.runId,
          w.agentSpec === agentSpec,
          w.snapshot === ctx.snapshot,
          w.signal === controller.signal,
          w.resume,
          w.state(Counter),
        ];
        await w.reportProgress('running');
        return ToolResults.success('probe', null);
      },
    };
    const log = new TranscriptLog();
    await recordingTool(probe, log).execute({}, ctx);
    expect(seen).toEqual(['c1', 'probe', 't1', 'r1', true, true, true, ctx.resume, 7]);
    expect(reports).toEqual(['progress running undefined undefined']);
    expect((JSON.parse(log.lines.at(-1) as string) as { activity: unknown }).activity).toEqual([{ method: 'progress', args: ['running', null, null] }]);
  });

  it('has no resume for a call that is not resumed, as the call has none', async () => {
    const ctx = { ...callContext([], { n: 0 }) } as { -readonly [K in keyof ToolCallContext]: ToolCallContext[K] };
    delete ctx.resume;
    let resume: unknown = 'unread';
    const probe: Tool = {
      descriptor: { id: 'probe', name: 'probe', description: 'reads its context', parameters: { type: 'object' } },
      execute: (_args, c) => {
        resume = c.resume;
        return ToolResults.success('probe', null);
      },
    };
    const log = new TranscriptLog();
    await recordingTool(probe, log).execute({}, ctx);
    expect(resume).toBeUndefined();
    expect(JSON.parse(log.lines.at(-1) as string)).not.toHaveProperty('resume');
  });

  it.each([
    ['Object.create', (c: ToolCallContext): ToolCallContext => Object.create(c) as ToolCallContext],
    ['a Proxy', (c: ToolCallContext): ToolCallContext => new Proxy(c, {})],
  ])('a tool that wraps its context (%s) reads and reports through it in a run, recorded or not, and the recording replays', async (_, wrap) => {
    const probe = defineTool({
      id: 'probe',
      description: 'wraps its context',
      args: z.object({}),
      execute: async (_args, c) => {
        const w = wrap(c);
        await w.reportProgress('running', w.callId);
        await w.streamOutput(`${w.toolName} in ${w.runId === c.runId ? 'its run' : 'another run'}`);
        return ToolResults.success('probe', { aborted: w.signal.aborted });
      },
    });
    const script = [{ tool_calls: [{ id: 'c1', name: 'probe', arguments: {} }] }, { text: 'done' }];
    const seen = (events: readonly { event_type: string; delta?: unknown; result?: unknown }[]): unknown[] =>
      events.flatMap((e) => (e.event_type === 'tool_call_stream_delta' ? [e.delta] : e.event_type === 'tool_call_done' ? [e.result] : []));
    const h = harness(script, { tools: [probe] });
    const live = await h.runtime.run({ agentId: 'agent', messages: [Messages.user('go')] }, h.sink);
    expect(live.ok).toBe(true);
    const expected = ['probe in its run', { tool_name: 'probe', status: 'success', data: { aborted: false }, message: null }];
    expect(seen(h.sink.events)).toEqual(expected);
    const { transcript } = await recordRun({
      agent: { id: 'a', model: 'm', system_prompt: 'x' },
      models: { m: { provider: 'p', model_name: 'pm' } },
      providers: { p: new ScriptedLlm(script) },
      tools: [probe],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 0, tick: 0 } },
      request: { messages: [Messages.user('go')] },
    });
    const events = transcript
      .split('\n')
      .filter((l) => l.startsWith('{"type":"event"'))
      .map((l) => (JSON.parse(l) as { event: { event_type: string } }).event);
    expect(seen(events)).toEqual(expected);
    expect((await replayTranscript(transcript)).identical).toBe(true);
  });
});
