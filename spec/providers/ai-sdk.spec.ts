import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LanguageModelV3, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { aiSdkExecutor, inferenceErrorOf, stopReasonOf, toCallOptions, toPrompt, usageOf } from '../../src/providers/ai-sdk.ts';
import { cassetteFetch, cassetteResponse, cassetteText, chunksOf, fromSse, recordCassette, toSse } from '../../src/providers/cassette.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { collectStream, InferenceFailure } from '../../src/runtime/llm.ts';
import { getWeather } from '../../src/cli/demo.ts';
import { checkRunInvariants } from '../../src/testing/invariants.ts';
import { cassetteServer } from '../support/cassettes.ts';

function fakeModel(parts: LanguageModelV3StreamPart[], seen: unknown[] = []): LanguageModelV3 {
  return {
    specificationVersion: 'v3',
    provider: 'fake',
    modelId: 'fake-1',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('not used')),
    doStream: (options) => {
      seen.push(options);
      return Promise.resolve({
        stream: new ReadableStream({
          start: (c) => {
            for (const p of parts) c.enqueue(p);
            c.close();
          },
        }),
      });
    },
  };
}
const usage = { inputTokens: { total: 10, noCache: 7, cacheRead: 3, cacheWrite: 0 }, outputTokens: { total: 5, text: 2, reasoning: 3 } };
const req = { model: 'm', messages: [Messages.user('hi')], tools: [] };

describe('aiSdkExecutor: AI SDK v3 stream parts → executor parts', () => {
  it('maps text, reasoning, tool input start/delta/call, usage (cached and reasoning tokens) and finish', async () => {
    const r = await collectStream(
      aiSdkExecutor(
        fakeModel([
          { type: 'stream-start', warnings: [] },
          { type: 'reasoning-delta', id: 'r', delta: 'hmm' },
          { type: 'text-delta', id: 't', delta: 'Hi' },
          { type: 'tool-input-start', id: 'c1', toolName: 'echo' },
          { type: 'tool-input-delta', id: 'c1', delta: '{"text":' },
          { type: 'tool-input-delta', id: 'c1', delta: '"x"}' },
          { type: 'tool-input-end', id: 'c1' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'echo', input: '{"text":"x"}' },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'ping', input: '' },
          { type: 'finish', usage, finishReason: { unified: 'tool-calls', raw: 'tool_calls' } },
        ]),
      ).stream(req),
    );
    expect(r).toEqual({
      content: [{ type: 'text', text: 'Hi' }],
      reasoning: 'hmm',
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cache_read_tokens: 3, cache_creation_tokens: 0, thinking_tokens: 3 },
      toolCalls: [
        { id: 'c1', name: 'echo', arguments: { text: 'x' } },
        { id: 'c2', name: 'ping', arguments: {} },
      ],
      stopReason: 'ToolUse',
      hasIncompleteToolCalls: false,
    });
  });

  it('length with a tool call still open → MaxTokens and incomplete tool calls flagged', async () => {
    const r = await collectStream(
      aiSdkExecutor(
        fakeModel([
          { type: 'tool-input-start', id: 'c1', toolName: 'echo' },
          { type: 'tool-input-delta', id: 'c1', delta: '{"te' },
          { type: 'finish', usage, finishReason: { unified: 'length', raw: 'length' } },
        ]),
      ).stream(req),
    );
    expect(r).toMatchObject({ stopReason: 'MaxTokens', hasIncompleteToolCalls: true, toolCalls: [] });
  });

  it('an error part and a failing doStream become typed inference failures', async () => {
    await expect(collectStream(aiSdkExecutor(fakeModel([{ type: 'error', error: new Error('boom') }])).stream(req))).rejects.toMatchObject({
      error: { code: 'provider', message: 'boom' },
    });
    const failing: LanguageModelV3 = { ...fakeModel([]), doStream: () => Promise.reject(Object.assign(new Error('slow down'), { statusCode: 429 })) };
    await expect(collectStream(aiSdkExecutor(failing).stream(req))).rejects.toBeInstanceOf(InferenceFailure);
    expect(inferenceErrorOf(Object.assign(new Error('t'), { statusCode: 504 }))).toEqual({ code: 'timeout', message: 't' });
    expect(inferenceErrorOf(Object.assign(new Error('a'), { name: 'AbortError' }))).toEqual({ code: 'cancelled' });
    expect(inferenceErrorOf('plain')).toEqual({ code: 'provider', message: 'plain' });
  });

  it('maps finish reasons and absent usage counts', () => {
    expect(stopReasonOf({ unified: 'stop', raw: 'stop_sequence' })).toBe('StopSequence');
    expect(stopReasonOf({ unified: 'content-filter', raw: 'refusal' })).toBe('EndTurn');
    expect(
      usageOf({
        inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: undefined, text: undefined, reasoning: undefined },
      }),
    ).toEqual({});
  });

  it('builds the prompt and the call options: tools by id, overrides, tool results named by their call', () => {
    const seen: unknown[] = [];
    const messages = [
      Messages.system('sys'),
      Messages.user('q'),
      Messages.assistantWithToolCalls('let me look', [{ id: 'c1', name: 'get_weather', arguments: { city: 'Oslo' } }]),
      Messages.tool('c1', '{"ok":true}'),
    ];
    expect(toPrompt(messages)).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: [{ type: 'text', text: 'q' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'let me look' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'get_weather', input: { city: 'Oslo' } },
        ],
      },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'get_weather', output: { type: 'text', value: '{"ok":true}' } }] },
    ]);
    const options = toCallOptions({ model: 'm', messages, tools: [getWeather.descriptor], overrides: { max_tokens: 9, temperature: 0.5, top_p: 0.9 } });
    expect(options).toMatchObject({
      maxOutputTokens: 9,
      temperature: 0.5,
      topP: 0.9,
      tools: [{ type: 'function', name: 'get_weather', description: getWeather.descriptor.description }],
    });
    void seen;
  });

  it('a required tool becomes the AI SDK tool choice naming it; none, and the model chooses', () => {
    const messages = [Messages.user('suggest')];
    expect(toCallOptions({ model: 'm', messages, tools: [getWeather.descriptor], requiredTool: 'get_weather' }).toolChoice).toEqual({
      type: 'tool',
      toolName: 'get_weather',
    });
    expect(toCallOptions({ model: 'm', messages, tools: [getWeather.descriptor] })).not.toHaveProperty('toolChoice');
  });
});

describe('wire cassettes', () => {
  const chunks = ['{"a":1}', '{"b":2}'];

  it('rebuild the provider SSE framing and read it back', async () => {
    expect(toSse(chunks, 'openai-compatible')).toBe('data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n');
    expect(toSse(['{"type":"ping"}'], 'anthropic')).toBe('event: ping\ndata: {"type":"ping"}\n\n');
    expect(fromSse(toSse(chunks, 'openai-compatible'))).toEqual(chunks);
    expect(fromSse('data: {"x":\r\ndata: 1}\r\n\r\n')).toEqual(['{"x":\n1}']);
    expect(await cassetteResponse(chunks, 'openai-compatible', 3).text()).toBe(toSse(chunks, 'openai-compatible'));
    expect(chunksOf(cassetteText(chunks))).toEqual(chunks);
  });

  describe('record mode, against a local fake server on 127.0.0.1', () => {
    const served = chunksOf(readFileSync(resolve(import.meta.dirname, '../../fixtures/cassettes/openai-compatible-weather-answer.chunks.jsonl'), 'utf8'));
    const server = createServer((req, res) => {
      if (req.url === '/fail') {
        res.writeHead(500).end('no');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const line of served) res.write(`data: ${line}\n\n`);
      res.end('data: [DONE]\n\n');
    });
    let base = '';
    beforeAll(async () => {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const address = server.address();
      base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it('writes the chunks of a live streaming response, which then replay through the provider', async () => {
      const recorded = await recordCassette(await fetch(`${base}/v1/chat/completions`, { method: 'POST' }));
      expect(recorded).toEqual(served);
      await expect(recordCassette(await fetch(`${base}/fail`))).rejects.toThrow('HTTP 500');
      const model = createOpenAICompatible({
        name: 'cassette',
        baseURL: 'http://x/v1',
        apiKey: 'k',
        fetch: cassetteFetch(recorded, 'openai-compatible'),
        includeUsage: true,
      })('m');
      expect(await collectStream(aiSdkExecutor(model).stream(req))).toMatchObject({
        content: [{ type: 'text', text: 'It is sunny in Oslo, 10 °C.' }],
        stopReason: 'EndTurn',
      });
    });
  });
});

describe('the agent loop on a real provider package, over a project-made cassette', () => {
  const dir = resolve(import.meta.dirname, '../../fixtures/cassettes');
  const answers = [
    chunksOf(readFileSync(join(dir, 'openai-compatible-weather-tool.chunks.jsonl'), 'utf8')),
    chunksOf(readFileSync(join(dir, 'openai-compatible-weather-answer.chunks.jsonl'), 'utf8')),
  ];
  let turn = 0;
  const server = cassetteServer('http://fake.test/v1/chat/completions', () => answers[turn++] ?? [], 'openai-compatible');
  beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
  afterAll(() => server.close());

  it('calls the tool and answers, with the request carrying the tool and its result', async () => {
    const model = createOpenAICompatible({ name: 'fake', baseURL: 'http://fake.test/v1', apiKey: 'k', includeUsage: true })('awaken-fake');
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('fake', aiSdkExecutor(model))
      .withModel('m', { provider: 'fake', model_name: 'awaken-fake' })
      .withAgentSpec({ id: 'a', model: 'm', system_prompt: 'Use tools.' })
      .withTool(getWeather)
      .build();
    if (!built.ok) throw new Error('build');
    const sink = new VecEventSink();
    const r = await built.value.run({ messages: [Messages.user('Weather in Oslo?')] }, sink);
    expect(r.ok && r.value).toMatchObject({ response: 'It is sunny in Oslo, 10 °C.', usage: { prompt_tokens: 130, completion_tokens: 18 } });
    expect(checkRunInvariants(sink.events)).toEqual([]);
    expect(sink.events.filter((e) => e.event_type === 'tool_call_delta').map((e) => (e as { args_delta: string }).args_delta)).toEqual([
      '{"city"',
      ': "Oslo"}',
    ]);
    const second = server.requests[1] as { tools: { function: { name: string } }[]; messages: { role: string; content: unknown }[] };
    expect(second.tools.map((t) => t.function.name)).toEqual(['get_weather']);
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool' });
  });
});
