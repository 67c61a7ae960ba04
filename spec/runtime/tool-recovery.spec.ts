import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import type { ToolRecoveryCapability } from '../../src/contract/tool-recovery.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { defineTool, ToolFailure, UnavailableBeforeDispatch, type Tool } from '../../src/runtime/tool.ts';

/** A tool that answers "unavailable before dispatch" `refusals` times, then echoes; `calls` counts its dispatches. */
function flaky(id: string, refusals: number, recovery?: ToolRecoveryCapability): Tool & { calls: number } {
  const tool = defineTool({
    id,
    description: `${id}, which refuses ${refusals} time(s) first`,
    args: z.object({ text: z.string() }),
    ...(recovery !== undefined ? { recovery } : {}),
    execute: ({ text }) => {
      counted.calls++;
      if (counted.calls <= refusals) throw new UnavailableBeforeDispatch(`no connection (${counted.calls})`);
      return ToolResults.success(id, { echoed: text });
    },
  });
  const counted = Object.assign(tool, { calls: 0 });
  return counted;
}

const echoing = (id: string, recovery?: ToolRecoveryCapability): Tool =>
  defineTool({
    id,
    description: id,
    args: z.object({ text: z.string() }),
    ...(recovery !== undefined ? { recovery } : {}),
    execute: ({ text }) => ToolResults.success(id, { echoed: text }),
  });

function runtimeWith(tools: readonly Tool[], sections: Record<string, unknown> = {}, callTools: readonly string[] = [tools[0]?.descriptor.id ?? 'x']) {
  const llm = new ScriptedLlm([{ tool_calls: callTools.map((name, i) => ({ id: `c${i + 1}`, name, arguments: { text: 'hi' } })) }, { text: 'done' }]);
  const store = new MemoryThreadRunStore();
  const builder = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'agent', model: 'm', sections: sections as never });
  for (const tool of tools) builder.withTool(tool);
  return { built: builder.build(), store };
}

async function run(tools: readonly Tool[], sections: Record<string, unknown> = {}, callTools?: readonly string[]) {
  const { built, store } = runtimeWith(tools, sections, callTools);
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const sink = new VecEventSink();
  const result = await built.value.run({ threadId: 't', messages: [Messages.user('go')] }, sink);
  if (!result.ok) throw new Error(JSON.stringify(result.error));
  const done = sink.events.filter((e): e is Extract<AgentEvent, { event_type: 'tool_call_done' }> => e.event_type === 'tool_call_done');
  return { result: result.value, done, store };
}

describe('a tool unavailable before dispatch', () => {
  it('is tried again, up to its policy’s max_attempts (3 by default), and its result is the first real one', async () => {
    const tool = flaky('lookup', 2);
    const { done, result } = await run([tool]);
    expect(tool.calls).toBe(3);
    expect(done.map((e) => [e.id, e.outcome, e.result.data])).toEqual([['c1', 'succeeded', { echoed: 'hi' }]]);
    expect(result.termination).toEqual({ type: 'natural_end' });
  });

  it('fails the call once the attempts run out, with what the tool said the last time', async () => {
    const tool = flaky('lookup', 10);
    const { done } = await run([tool], { tool_execution: { recovery: { lookup: { max_attempts: 2 } } } });
    expect(tool.calls).toBe(2);
    expect(done.map((e) => [e.outcome, e.result.status, e.result.message])).toEqual([['failed', 'error', 'Unavailable before dispatch: no connection (2)']]);
  });

  it('is not tried again when max_attempts is 1', async () => {
    const tool = flaky('lookup', 1);
    const { done } = await run([tool], { tool_execution: { recovery: { lookup: { max_attempts: 1 } } } });
    expect(tool.calls).toBe(1);
    expect(done[0]?.outcome).toBe('failed');
  });

  it('is the only failure tried again: a tool that failed after it left is run once', async () => {
    let calls = 0;
    const tool = defineTool({
      id: 'charge',
      description: 'charge',
      args: z.object({ text: z.string() }),
      execute: () => {
        calls++;
        throw new ToolFailure({ code: 'execution_failed', message: 'the bank said no' });
      },
    });
    const { done } = await run([tool]);
    expect(calls).toBe(1);
    expect(done.map((e) => e.result.message)).toEqual(['Execution failed: the bank said no']);
  });
});

describe('tool_execution.recovery', () => {
  const refusal = (tools: readonly Tool[], recovery: unknown): unknown => {
    const { built } = runtimeWith(tools, { tool_execution: { recovery } });
    return built.ok ? 'built' : built.error;
  };

  it('refuses a mode beyond what the tool says of itself, naming the tool, the mode and what is allowed', () => {
    expect(refusal([echoing('send_mail')], { send_mail: { mode: 'replay_safe' } })).toEqual({
      code: 'validation_failed',
      message:
        "agent 'agent': invalid config section 'tool_execution' of plugin 'runtime': recovery.send_mail.mode: 'replay_safe' asks more than the tool's recovery capability 'non_recoverable' (allowed: 'never_replay')",
    });
    expect(refusal([echoing('lookup', 'idempotent')], { lookup: { mode: 'replay_safe' } })).toEqual({
      code: 'validation_failed',
      message:
        "agent 'agent': invalid config section 'tool_execution' of plugin 'runtime': recovery.lookup.mode: 'replay_safe' asks more than the tool's recovery capability 'idempotent' (allowed: 'never_replay', 'idempotent')",
    });
  });

  it('refuses a policy for a tool the agent does not have (a misspelt id would leave the real one on the default)', () => {
    expect(refusal([echoing('lookup', 'replay_safe')], { lookpu: { mode: 'replay_safe' } })).toEqual({
      code: 'validation_failed',
      message: "agent 'agent': invalid config section 'tool_execution' of plugin 'runtime': recovery.lookpu: the agent has no tool 'lookpu'",
    });
  });

  it('refuses unknown fields and a max_attempts below 1', () => {
    expect(refusal([echoing('lookup')], { lookup: { attempts: 2 } })).toEqual({
      code: 'validation_failed',
      message: "agent 'agent': invalid config section 'tool_execution' of plugin 'runtime': recovery.lookup.attempts: unknown field",
    });
    expect(refusal([echoing('lookup')], { lookup: { max_attempts: 0 } })).toEqual({
      code: 'validation_failed',
      message: "agent 'agent': invalid config section 'tool_execution' of plugin 'runtime': recovery.lookup.max_attempts: Too small: expected number to be >=1",
    });
  });

  it('accepts a mode the tool allows, and never_replay for any tool', () => {
    expect(refusal([echoing('lookup', 'replay_safe'), echoing('send_mail')], { lookup: { mode: 'replay_safe' }, send_mail: { mode: 'never_replay' } })).toBe(
      'built',
    );
  });

  it('pins each call’s policy into the batch as it is stored before any tool runs (the default ones left out)', async () => {
    const { store } = await run(
      [echoing('lookup', 'replay_safe'), echoing('send_mail')],
      { tool_execution: { recovery: { lookup: { mode: 'replay_safe', max_attempts: 5 } } } },
      ['lookup', 'send_mail', 'lookup'],
    );
    const begun = store.checkpoints.map((c) => c.threadState.extensions['__runtime.tool_batch']).find((r) => r !== null && r !== undefined);
    expect(begun).toMatchObject({
      calls: [{ id: 'c1' }, { id: 'c2' }, { id: 'c3' }],
      results: {},
      recovery: { c1: { mode: 'replay_safe', max_attempts: 5 }, c3: { mode: 'replay_safe', max_attempts: 5 } },
    });
    expect(Object.keys((begun as { recovery: object }).recovery)).toEqual(['c1', 'c3']);
  });

  it('writes no pins when every call has the default policy', async () => {
    const { store } = await run([echoing('lookup')]);
    const begun = store.checkpoints.map((c) => c.threadState.extensions['__runtime.tool_batch']).find((r) => r !== null && r !== undefined);
    expect(begun).not.toHaveProperty('recovery');
  });
});

describe('recorded and replayed', () => {
  it('each dispatch of a call is a tool record, and the run replays identical, its recovery policy and the tool’s capability included', async () => {
    const { recordRun } = await import('../../src/replay/recorder.ts');
    const { replayTranscript } = await import('../../src/replay/replayer.ts');
    const tool = flaky('lookup', 1, 'replay_safe');
    const { transcript } = await recordRun({
      agent: { id: 'a', model: 'm', sections: { tool_execution: { recovery: { lookup: { mode: 'replay_safe', max_attempts: 2 } } } } },
      models: { m: { provider: 'p', model_name: 'pm' } },
      providers: { p: new ScriptedLlm([{ tool_calls: [{ id: 'c1', name: 'lookup', arguments: { text: 'hi' } }] }, { text: 'done' }]) },
      tools: [tool],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 0 } },
      request: { messages: [Messages.user('go')] },
    });
    const tools = transcript
      .trimEnd()
      .split('\n')
      .filter((l) => l.startsWith('{"type":"tool"'))
      .map((l) => JSON.parse(l) as { call_id: string; tool_error?: unknown; result?: { status: string } });
    expect(tools.map((r) => [r.call_id, r.tool_error ?? r.result?.status])).toEqual([
      ['c1', { code: 'unavailable_before_dispatch', message: 'no connection (1)' }],
      ['c1', 'success'],
    ]);
    const report = await replayTranscript(transcript);
    expect(report.identical).toBe(true);
    // One dispatch fewer in the record and the replay says where: the run asked for a second.
    const withoutRetry = transcript.replace(/\{"type":"tool"[^\n]*"result"[^\n]*\n/, '');
    const short = await replayTranscript(withoutRetry);
    expect(short.identical).toBe(false);
  });
});
