import { z } from 'zod';
import type { AgentEvent } from '../src/contract/event.ts';
import type { Message } from '../src/contract/message.ts';
import { Messages } from '../src/contract/message.ts';
import type { StreamPart } from '../src/contract/stream.ts';
import { ToolResults } from '../src/contract/tool.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../src/runtime/agent-runtime.ts';
import { realEnv } from '../src/runtime/env.ts';
import type { InferenceRequest, LlmExecutor } from '../src/runtime/llm.ts';
import { defineTool } from '../src/runtime/tool.ts';
import type { Suite } from './harness.ts';

/**
 * The loop scenario: N steps, each an inference answering one `echo` tool call, the last a text
 * answer. The model is stateless (it counts the assistant turns already in the request), so one
 * runtime serves every iteration.
 */
function loopModel(steps: number, deltas = 1): LlmExecutor {
  return {
    name: 'bench',
    stream: (request: InferenceRequest) =>
      (async function* (): AsyncGenerator<StreamPart> {
        const turns = request.messages.filter((m) => m.role === 'assistant').length;
        if (turns < steps - 1) {
          yield { type: 'tool_call_start', id: `c${turns}`, name: 'echo' };
          yield { type: 'tool_call_delta', id: `c${turns}`, args_delta: '{"text":"hi"}' };
          yield { type: 'finish', stop_reason: 'ToolUse' };
          return;
        }
        for (let i = 0; i < deltas; i++) yield { type: 'text_delta', delta: 'x' };
        yield { type: 'finish', stop_reason: 'EndTurn' };
      })(),
  };
}

const EchoArgs = z.object({ text: z.string() });
const echo = defineTool({ id: 'echo', description: 'echo', args: EchoArgs, execute: ({ text }) => ToolResults.success('echo', { echoed: text }) });

function awakenRuntime(steps: number, deltas = 1): AgentRuntime {
  const built = new AgentRuntimeBuilder()
    .withEnv(realEnv())
    .withProvider('bench', loopModel(steps, deltas))
    .withModel('m', { provider: 'bench', model_name: 'bench' })
    .withAgentSpec({ id: 'a', model: 'm', max_rounds: steps + 1 })
    .withTool(echo)
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

const noSink = { emit: (_e: AgentEvent): void => undefined };

async function awakenRun(runtime: AgentRuntime): Promise<void> {
  const r = await runtime.run({ messages: [Messages.user('go')] }, noSink);
  if (!r.ok || r.value.termination.type !== 'natural_end') throw new Error('bench run did not end naturally');
}

/** floor-bare: push messages, await the scripted model and the tool. Nothing else. */
async function floorBare(steps: number, deltas = 1): Promise<void> {
  const model = loopModel(steps, deltas);
  const messages: Message[] = [Messages.user('go')];
  for (;;) {
    let text = '';
    let args = '';
    let id: string | undefined;
    for await (const part of model.stream({ model: 'bench', messages, tools: [] })) {
      if (part.type === 'text_delta') text += part.delta;
      else if (part.type === 'tool_call_start') id = part.id;
      else if (part.type === 'tool_call_delta') args += part.args_delta;
    }
    if (id === undefined) {
      messages.push(Messages.assistant(text));
      return;
    }
    messages.push(Messages.assistantWithToolCalls(text, [{ id, name: 'echo', arguments: JSON.parse(args) as never }]));
    const result = await echo.execute(JSON.parse(args) as never, undefined as never);
    messages.push(Messages.tool(id, JSON.stringify(result)));
  }
}

const PHASES = ['run_start', 'step_start', 'before_inference', 'after_inference', 'before_tool_execute', 'after_tool_execute', 'step_end', 'run_end'] as const;

/**
 * floor-phased: floor-bare plus, per phase, a frozen snapshot and an atomic commit, hook dispatch
 * and one event, and zod validation of the tool arguments.
 */
async function floorPhased(steps: number, deltas = 1): Promise<void> {
  const model = loopModel(steps, deltas);
  const messages: Message[] = [Messages.user('go')];
  let state: Readonly<Record<string, number>> = Object.freeze({ revision: 0, phases: 0 });
  const events: unknown[] = [];
  const hook = (snapshot: Readonly<Record<string, number>>): [string, number] => ['phases', (snapshot['phases'] ?? 0) + 1];
  const phase = async (name: string): Promise<void> => {
    const snapshot = state;
    const [key, value] = await hook(snapshot);
    state = Object.freeze({ ...snapshot, [key]: value, revision: (snapshot['revision'] ?? 0) + 1 });
    events.push({ phase: name });
  };
  await phase('run_start');
  for (;;) {
    await phase('step_start');
    await phase('before_inference');
    let text = '';
    let args = '';
    let id: string | undefined;
    for await (const part of model.stream({ model: 'bench', messages, tools: [] })) {
      if (part.type === 'text_delta') {
        text += part.delta;
        events.push(part);
      } else if (part.type === 'tool_call_start') id = part.id;
      else if (part.type === 'tool_call_delta') args += part.args_delta;
    }
    await phase('after_inference');
    if (id === undefined) {
      messages.push(Messages.assistant(text));
      await phase('step_end');
      break;
    }
    messages.push(Messages.assistantWithToolCalls(text, [{ id, name: 'echo', arguments: JSON.parse(args) as never }]));
    await phase('before_tool_execute');
    const parsed = EchoArgs.parse(JSON.parse(args));
    const result = await echo.execute(parsed, undefined as never);
    await phase('after_tool_execute');
    messages.push(Messages.tool(id, JSON.stringify(result)));
    await phase('step_end');
  }
  await phase(PHASES[7]);
}

function loopSuite(steps: number): Suite {
  const runtime = awakenRuntime(steps);
  return {
    name: `loop-n${steps}`,
    description: `agent loop, ${steps} steps (one echo tool call per step, a text answer last), beside the floors`,
    units: { name: 'step', count: steps },
    cases: [
      { name: 'awaken run', role: 'subject', fn: () => awakenRun(runtime) },
      { name: 'floor-bare', role: 'subject', fn: () => floorBare(steps) },
      { name: 'floor-phased', role: 'baseline', fn: () => floorPhased(steps) },
    ],
  };
}

/** One inference streaming 1,000 text deltas. */
function deltaSuite(): Suite {
  const deltas = 1000;
  const runtime = awakenRuntime(1, deltas);
  return {
    name: 'stream-1000-deltas',
    description: 'one step streaming 1,000 text deltas to a sink (per-delta cost)',
    units: { name: 'delta', count: deltas },
    cases: [
      { name: 'awaken run', role: 'subject', fn: () => awakenRun(runtime) },
      { name: 'floor-phased', role: 'baseline', fn: () => floorPhased(1, deltas) },
    ],
  };
}

export const loopSuites = (): Suite[] => [loopSuite(1), loopSuite(10), loopSuite(50), loopSuite(100), deltaSuite()];
