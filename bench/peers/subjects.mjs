// The scenario, once per framework: a run of N steps, each an inference answering one `echo` tool
// call, the last a text answer. Every framework gets a hand-written mock of its own model interface
// that answers the k-th call of a run in O(1), and the same echo tool. `make(N)` builds what one run
// needs once; `run()` does one run and returns the number of inferences it took.
import { z } from 'zod';

const ARGS = '{"text":"hi"}';
const echo = (text) => ({ echoed: text });

/** The k-th answer of a run: a tool call while k < N - 1, then text. */
const scripted = (steps) => {
  let k = 0;
  return { reset: () => (k = 0), next: () => k++, toolStep: (i) => i < steps - 1, count: () => k };
};

// ---- awaken-ts: the runtime as its README builds it (default Env), a sink that drops events ----------
export async function awaken(steps) {
  const { AgentRuntimeBuilder, Messages, ToolResults, defineTool, realEnv } = await import('awaken-ts');
  const s = scripted(steps);
  const tool = (i) => [
    { type: 'tool_call_start', id: `c${i}`, name: 'echo' },
    { type: 'tool_call_delta', id: `c${i}`, args_delta: ARGS },
    { type: 'finish', stop_reason: 'ToolUse' },
  ];
  const text = [{ type: 'text_delta', delta: 'done' }, { type: 'finish', stop_reason: 'EndTurn' }];
  const built = new AgentRuntimeBuilder()
    .withEnv(realEnv())
    .withProvider('mock', {
      name: 'mock',
      stream: () => {
        const i = s.next();
        const parts = s.toolStep(i) ? tool(i) : text;
        let j = 0;
        const it = { next: () => Promise.resolve(j < parts.length ? { done: false, value: parts[j++] } : { done: true, value: undefined }), return: () => Promise.resolve({ done: true, value: undefined }) };
        return { [Symbol.asyncIterator]: () => it };
      },
    })
    .withModel('m', { provider: 'mock', model_name: 'mock' })
    .withAgentSpec({ id: 'a', model: 'm', max_rounds: 1_000_000 })
    .withTool(defineTool({ id: 'echo', description: 'echo', args: z.object({ text: z.string() }), execute: ({ text }) => ToolResults.success('echo', echo(text)) }))
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  const runtime = built.value;
  const sink = { emit: () => undefined };
  return async () => {
    s.reset();
    const r = await runtime.run({ messages: [Messages.user('go')] }, sink);
    if (!r.ok || r.value.termination.type !== 'natural_end') throw new Error(`awaken: ${JSON.stringify(r)}`);
    return s.count();
  };
}

// ---- the AI SDK: LanguageModelV3 (ai@6) and V4 (ai@7) --------------------------------------------------
const aiUsage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** `doGenerate` of an AI SDK model: the k-th answer, its finish reason in the spec version's form. */
const aiGenerate = (s, finish, usage) => async () => {
  const i = s.next();
  return s.toolStep(i)
    ? { content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'echo', input: ARGS }], finishReason: finish('tool-calls'), usage, warnings: [] }
    : { content: [{ type: 'text', text: 'done' }], finishReason: finish('stop'), usage, warnings: [] };
};

function aiModel(version, s) {
  return {
    specificationVersion: version,
    provider: 'mock',
    modelId: 'mock',
    supportedUrls: {},
    // V3 and V4 give the finish reason as { unified, raw }.
    doGenerate: aiGenerate(s, (unified) => ({ unified, raw: undefined }), aiUsage),
    doStream: async () => {
      throw new Error('not used');
    },
  };
}

export async function aiSdk6(steps) {
  const { generateText, tool, stepCountIs } = await import('ai');
  const s = scripted(steps);
  const model = aiModel('v3', s);
  const tools = { echo: tool({ description: 'echo', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => echo(text) }) };
  return async () => {
    s.reset();
    const r = await generateText({ model, prompt: 'go', tools, stopWhen: stepCountIs(steps) });
    if (r.text !== 'done') throw new Error(`ai@6: ${r.text}`);
    return s.count();
  };
}

export async function aiSdk7(steps) {
  const { ToolLoopAgent, tool, stepCountIs } = await import('ai7');
  const s = scripted(steps);
  const agent = new ToolLoopAgent({
    model: aiModel('v4', s),
    tools: { echo: tool({ description: 'echo', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => echo(text) }) },
    stopWhen: stepCountIs(steps),
  });
  return async () => {
    s.reset();
    const r = await agent.generate({ prompt: 'go' });
    if (r.text !== 'done') throw new Error(`ai@7: ${r.text}`);
    return s.count();
  };
}

// ---- OpenAI Agents SDK: its Model interface -----------------------------------------------------------
export async function openaiAgents(steps) {
  const { Agent, Runner, Usage, tool } = await import('@openai/agents-core');
  const s = scripted(steps);
  const model = {
    getResponse: async () => {
      const i = s.next();
      const output = s.toolStep(i)
        ? [{ type: 'function_call', callId: `c${i}`, name: 'echo', arguments: ARGS, status: 'completed' }]
        : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }];
      return { usage: new Usage(), output, responseId: `r${i}` };
    },
    getStreamedResponse: () => {
      throw new Error('not used');
    },
  };
  const agent = new Agent({
    name: 'a',
    instructions: '',
    model,
    tools: [tool({ name: 'echo', description: 'echo', parameters: z.object({ text: z.string() }), execute: async ({ text }) => JSON.stringify(echo(text)) })],
  });
  const runner = new Runner({ tracingDisabled: true });
  return async () => {
    s.reset();
    const r = await runner.run(agent, 'go', { maxTurns: steps + 1 });
    if (r.finalOutput !== 'done') throw new Error(`agents: ${r.finalOutput}`);
    return s.count();
  };
}

// ---- LangGraph.js: a BaseChatModel under createReactAgent ----------------------------------------------
export async function langGraph(steps) {
  const { BaseChatModel } = await import('@langchain/core/language_models/chat_models');
  const { AIMessage } = await import('@langchain/core/messages');
  const { tool } = await import('@langchain/core/tools');
  const { createReactAgent } = await import('@langchain/langgraph/prebuilt');
  const s = scripted(steps);
  class MockChat extends BaseChatModel {
    _llmType() {
      return 'mock';
    }
    bindTools() {
      return this;
    }
    async _generate() {
      const i = s.next();
      const message = s.toolStep(i)
        ? new AIMessage({ content: '', tool_calls: [{ id: `c${i}`, name: 'echo', args: { text: 'hi' }, type: 'tool_call' }] })
        : new AIMessage({ content: 'done' });
      return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
    }
  }
  const echoTool = tool(async ({ text }) => JSON.stringify(echo(text)), { name: 'echo', description: 'echo', schema: z.object({ text: z.string() }) });
  const agent = createReactAgent({ llm: new MockChat({}), tools: [echoTool] });
  return async () => {
    s.reset();
    const r = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, { recursionLimit: 2 * steps + 10 });
    const last = r.messages.at(-1);
    if (last?.content !== 'done') throw new Error(`langgraph: ${JSON.stringify(last?.content)}`);
    return s.count();
  };
}

// ---- Mastra: an Agent over an AI SDK LanguageModelV2 ---------------------------------------------------
export async function mastra(steps) {
  const { Agent } = await import('@mastra/core/agent');
  const { createTool } = await import('@mastra/core/tools');
  const s = scripted(steps);
  const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
  const model = {
    specificationVersion: 'v2',
    provider: 'mock',
    modelId: 'mock',
    supportedUrls: {},
    // V2 gives the finish reason as a string.
    doGenerate: aiGenerate(s, (reason) => reason, usage),
    doStream: async () => {
      const i = s.next();
      const chunks = s.toolStep(i)
        ? [
            { type: 'stream-start', warnings: [] },
            { type: 'tool-call', toolCallId: `c${i}`, toolName: 'echo', input: ARGS },
            { type: 'finish', finishReason: 'tool-calls', usage },
          ]
        : [
            { type: 'stream-start', warnings: [] },
            { type: 'text-start', id: 't' },
            { type: 'text-delta', id: 't', delta: 'done' },
            { type: 'text-end', id: 't' },
            { type: 'finish', finishReason: 'stop', usage },
          ];
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const c of chunks) controller.enqueue(c);
            controller.close();
          },
        }),
      };
    },
  };
  const agent = new Agent({
    id: 'a',
    name: 'a',
    instructions: 'answer',
    model,
    tools: { echo: createTool({ id: 'echo', description: 'echo', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => echo(text) }) },
  });
  return async () => {
    s.reset();
    const r = await agent.generate('go', { maxSteps: steps });
    if (r.text !== 'done') throw new Error(`mastra: ${r.text}`);
    return s.count();
  };
}

export const SUBJECTS = [
  ['awaken-ts (default Env)', awaken],
  ['ai@7 ToolLoopAgent', aiSdk7],
  ['ai@6 generateText', aiSdk6],
  ['@openai/agents-core', openaiAgents],
  ['LangGraph.js createReactAgent', langGraph],
  ['Mastra Agent', mastra],
];
