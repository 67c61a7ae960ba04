import { describe, expect, it } from 'vitest';
import { serialiseEvent, type AgentEvent } from '../src/contract/event.ts';
import { Messages } from '../src/contract/message.ts';
import { encodeA2a, frameA2a } from '../src/protocols/a2a/encoder.ts';
import { judgeA2a } from '../src/protocols/a2a/judge.ts';
import { encodeAcp, frameAcp } from '../src/protocols/acp/encoder.ts';
import { judgeAcp } from '../src/protocols/acp/judge.ts';
import { encodeAgUi, frameAgUi } from '../src/protocols/ag-ui/encoder.ts';
import { judgeAgUi } from '../src/protocols/ag-ui/judge.ts';
import { encodeAiSdk, frameAiSdk } from '../src/protocols/ai-sdk-v6/encoder.ts';
import { judgeAiSdk } from '../src/protocols/ai-sdk-v6/judge.ts';
import { encodeMcp, frameMcp } from '../src/protocols/mcp/encoder.ts';
import { judgeMcp } from '../src/protocols/mcp/judge.ts';
import { AgentRuntimeBuilder } from '../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../src/runtime/env.ts';
import { VecEventSink } from '../src/runtime/event-sink.ts';
import { InferenceFailure, type LlmExecutor } from '../src/runtime/llm.ts';
import { eventsOf } from './support.ts';

/**
 * A run whose provider failed mid-stream (after reasoning, text and the start of a tool call) ends
 * with the `error` event, then its step's end and its `run_finish`: each protocol's stream ends with
 * its own error terminal there, judged by the protocol's official library, and nothing after it is
 * sent. The stream is `streams/edge-inference-failed-mid-stream.events.jsonl` (golden frames beside
 * the others); the first spec keeps it what the runtime emits.
 */

const FILE = 'edge-inference-failed-mid-stream.events.jsonl';
const MESSAGE = 'rate limited: too many requests';

async function failedRun(): Promise<AgentEvent[]> {
  const llm: LlmExecutor = {
    name: 'failing',
    async *stream() {
      yield { type: 'reasoning_delta', delta: 'Checking the forecast.' };
      yield { type: 'text_delta', delta: 'Let me look that up' };
      yield { type: 'tool_call_start', id: 'call_weather', name: 'get_weather' };
      yield { type: 'tool_call_delta', id: 'call_weather', args_delta: '{"city":"Par' };
      throw new InferenceFailure({ code: 'rate_limited', message: 'too many requests' });
    },
  };
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('p', llm)
    .withModel('m', { provider: 'p', model_name: 'm' })
    .withAgentSpec({ id: 'a', model: 'm' })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const sink = new VecEventSink();
  await built.value.run({ messages: [Messages.user('weather in Paris?')] }, sink);
  return sink.events;
}

describe('a run whose provider failed, in every protocol', () => {
  it('the stream is what the runtime emits: error (no inference_complete), then the step and the run close', async () => {
    const events = await failedRun();
    expect(events.map(serialiseEvent)).toEqual(eventsOf(FILE).map(serialiseEvent));
    expect(events.map((e) => e.event_type)).not.toContain('inference_complete');
    expect(events.findIndex((e) => e.event_type === 'error')).toBe(events.length - 5);
  });

  it('AI SDK v6: an error chunk is the last, useChat shows its text; no finish after it', async () => {
    const v = await judgeAiSdk(frameAiSdk(encodeAiSdk(eventsOf(FILE))));
    expect(v.problems).toEqual([]);
    expect(v.streamError).toBe(MESSAGE);
    expect(v.chunks.at(-1)).toEqual({ type: 'error', errorText: MESSAGE });
    expect(v.chunks.map((c) => c.type)).not.toContain('finish');
  });

  it('AG-UI: RUN_ERROR with the message and the failure code is the last event', async () => {
    const v = await judgeAgUi(frameAgUi(encodeAgUi(eventsOf(FILE))));
    expect(v.problems).toEqual([]);
    expect(v.runError).toBe(MESSAGE);
    expect(v.events.at(-1)).toMatchObject({ type: 'RUN_ERROR', message: MESSAGE, code: 'rate_limited' });
    expect(v.events.map((e) => e.type)).not.toContain('RUN_FINISHED');
  });

  it('A2A: the task ends FAILED, its last status message saying why', async () => {
    const v = await judgeA2a(frameA2a(encodeA2a(eventsOf(FILE))));
    expect(v.problems).toEqual([]);
    expect(v.state).toBe('TASK_STATE_FAILED');
    const last = v.frames.at(-1);
    const parts = last?.payload?.$case === 'statusUpdate' ? (last.payload.value.status?.message?.parts ?? []) : [];
    expect(parts.map((p) => (p.content?.$case === 'text' ? p.content.value : undefined))).toEqual([MESSAGE]);
  });

  it('MCP: the tools/call result is an error naming the failure', async () => {
    const v = await judgeMcp(frameMcp(encodeMcp(eventsOf(FILE))));
    expect(v.problems).toEqual([]);
    expect(v.result?.isError).toBe(true);
    expect((v.result?.content ?? []).map((c) => (c.type === 'text' ? c.text : ''))).toContain(`agent run failed: ${MESSAGE}`);
  });

  it('ACP: the session/prompt request fails with the message', async () => {
    const v = await judgeAcp(frameAcp(encodeAcp(eventsOf(FILE))));
    expect(v.problems).toEqual([]);
    expect(v.error).toBe(MESSAGE);
    expect(v.stopReason).toBeUndefined();
  });
});
