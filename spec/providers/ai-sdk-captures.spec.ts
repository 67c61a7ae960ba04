import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StopReason, StreamResult } from '../../src/contract/stream.ts';
import { aiSdkExecutor } from '../../src/providers/ai-sdk.ts';
import { chunksOf } from '../../src/providers/cassette.ts';
import { collectStream } from '../../src/runtime/llm.ts';
import { cassetteServer } from '../support/cassettes.ts';

// Real recorded provider streams (fixtures/provider/, see its PROVENANCE.md), replayed
// over HTTP by msw to the unchanged AI SDK provider packages, through aiSdkExecutor. The expected
// content is computed from the raw chunks by the small, independent readers below.
const root = resolve(import.meta.dirname, '../../fixtures/provider');
const files = (kind: string): string[] =>
  readdirSync(join(root, kind))
    .filter((f) => f.endsWith('.chunks.jsonl'))
    .sort();

interface Expected {
  text: string;
  reasoning: string;
  toolCalls: { id: string; name: string; arguments: unknown }[];
  promptTokens?: number;
  completionTokens?: number;
  stop?: StopReason;
}

// The fields of the raw provider chunks that the readers below use.
type OpenAiPart = { type: 'text'; text: string } | { type: 'thinking'; thinking: { text: string }[] };
interface OpenAiChunk {
  choices?: {
    delta?: {
      content?: string | OpenAiPart[] | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
}
type AnthropicDelta =
  | { type: 'text_delta'; text: string }
  | { type: 'thinking_delta'; thinking: string }
  | { type: 'input_json_delta'; partial_json: string }
  | { type: 'signature_delta'; signature: string };
type AnthropicEvent =
  | {
      type: 'message_start';
      message: { usage: { input_tokens?: number; cache_creation_input_tokens?: number; cache_read_input_tokens?: number; output_tokens: number } };
    }
  | { type: 'content_block_start'; index: number; content_block: { type: string; id: string; name: string } }
  | { type: 'content_block_delta'; index: number; delta: AnthropicDelta }
  | { type: 'message_delta'; delta?: { stop_reason?: string | null }; usage?: { output_tokens?: number } }
  | { type: 'content_block_stop' | 'message_stop' | 'ping' };

function expectedOpenAi(chunks: readonly string[]): Expected {
  const out: Expected = { text: '', reasoning: '', toolCalls: [] };
  const calls = new Map<number, { id: string; name: string; args: string }>();
  for (const line of chunks) {
    const c = JSON.parse(line) as OpenAiChunk;
    const choice = c.choices?.[0];
    const delta = choice?.delta;
    const content = delta?.content;
    if (typeof content === 'string') out.text += content;
    // Mistral sends content as parts: text, and thinking with its own text parts.
    if (Array.isArray(content)) {
      for (const part of content) {
        if (part.type === 'text') out.text += part.text;
        if (part.type === 'thinking') for (const t of part.thinking) out.reasoning += t.text;
      }
    }
    const r = delta?.reasoning_content ?? delta?.reasoning;
    if (typeof r === 'string') out.reasoning += r;
    for (const tc of delta?.tool_calls ?? []) {
      const entry = calls.get(tc.index) ?? { id: '', name: '', args: '' };
      if (typeof tc.id === 'string' && tc.id !== '') entry.id = tc.id;
      if (typeof tc.function?.name === 'string' && tc.function.name !== '') entry.name = tc.function.name;
      if (typeof tc.function?.arguments === 'string') entry.args += tc.function.arguments;
      calls.set(tc.index, entry);
    }
    const finish = choice?.finish_reason;
    if (typeof finish === 'string') out.stop = finish === 'length' ? 'MaxTokens' : finish === 'tool_calls' ? 'ToolUse' : 'EndTurn';
    const usage = c.usage;
    if (usage !== undefined && usage !== null) {
      out.promptTokens = usage.prompt_tokens;
      out.completionTokens = usage.completion_tokens;
    }
  }
  out.toolCalls = [...calls.values()].map((c) => ({ id: c.id, name: c.name, arguments: c.args.trim() === '' ? {} : JSON.parse(c.args) }));
  return out;
}

function expectedAnthropic(chunks: readonly string[]): Expected {
  const out: Expected = { text: '', reasoning: '', toolCalls: [] };
  const calls = new Map<number, { id: string; name: string; args: string }>();
  for (const line of chunks) {
    const e = JSON.parse(line) as AnthropicEvent;
    if (e.type === 'message_start') {
      const u = e.message.usage;
      out.promptTokens = (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
      out.completionTokens = u.output_tokens;
    } else if (e.type === 'content_block_start' && e.content_block.type === 'tool_use') {
      calls.set(e.index, { id: e.content_block.id, name: e.content_block.name, args: '' });
    } else if (e.type === 'content_block_delta') {
      const d = e.delta;
      if (d.type === 'text_delta') out.text += d.text;
      else if (d.type === 'thinking_delta') out.reasoning += d.thinking;
      else if (d.type === 'input_json_delta') {
        const c = calls.get(e.index);
        if (c !== undefined) c.args += d.partial_json;
      }
    } else if (e.type === 'message_delta') {
      const reason = e.delta?.stop_reason;
      out.stop = reason === 'max_tokens' ? 'MaxTokens' : reason === 'tool_use' ? 'ToolUse' : reason === 'stop_sequence' ? 'StopSequence' : 'EndTurn';
      if (typeof e.usage?.output_tokens === 'number') out.completionTokens = e.usage.output_tokens;
    }
  }
  out.toolCalls = [...calls.values()].map((c) => ({ id: c.id, name: c.name, arguments: c.args.trim() === '' ? {} : JSON.parse(c.args) }));
  return out;
}

function assertMatches(result: StreamResult, expected: Expected): void {
  expect(result.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toBe(expected.text);
  expect(result.reasoning).toBe(expected.reasoning);
  expect(result.toolCalls).toEqual(expected.toolCalls);
  expect(result.usage?.prompt_tokens).toBe(expected.promptTokens);
  expect(result.usage?.completion_tokens).toBe(expected.completionTokens);
  expect(result.stopReason).toBe(expected.stop);
  expect(result.hasIncompleteToolCalls).toBe(false);
}

const request = { model: 'm', messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }], tools: [] };

describe('real OpenAI-compatible captures through @ai-sdk/openai-compatible', () => {
  let current: string[] = [];
  const server = cassetteServer('http://openai.test/v1/chat/completions', () => current, 'openai-compatible');
  beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
  afterAll(() => server.close());

  it.each(files('openai-compatible'))('%s', async (file) => {
    current = chunksOf(readFileSync(join(root, 'openai-compatible', file), 'utf8'));
    const model = createOpenAICompatible({ name: 'capture', baseURL: 'http://openai.test/v1', apiKey: 'test', includeUsage: true })('model');
    const result = await collectStream(aiSdkExecutor(model).stream(request));
    assertMatches(result, expectedOpenAi(current));
  });

  it('pins the content of a few captures', async () => {
    current = chunksOf(readFileSync(join(root, 'openai-compatible', 'xai-package-tool-call.chunks.jsonl'), 'utf8'));
    const model = createOpenAICompatible({ name: 'capture', baseURL: 'http://openai.test/v1', apiKey: 'test', includeUsage: true })('model');
    const r = await collectStream(aiSdkExecutor(model).stream(request));
    expect(r.toolCalls).toEqual([{ id: 'call_55117580', name: 'weather', arguments: { location: 'San Francisco' } }]);
    expect(r.usage).toMatchObject({ prompt_tokens: 291, completion_tokens: 26, cache_read_tokens: 290, thinking_tokens: 196 });
    current = chunksOf(readFileSync(join(root, 'openai-compatible', 'deepseek-issue-19381-thinking-reasoning.chunks.jsonl'), 'utf8'));
    const d = await collectStream(aiSdkExecutor(model).stream(request));
    expect(d).toMatchObject({ reasoning: 'We need', stopReason: 'MaxTokens' });
  });
});

describe('real Anthropic Messages captures through @ai-sdk/anthropic', () => {
  let current: string[] = [];
  const server = cassetteServer('http://anthropic.test/v1/messages', () => current, 'anthropic');
  beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
  afterAll(() => server.close());

  it.each(files('anthropic'))('%s', async (file) => {
    current = chunksOf(readFileSync(join(root, 'anthropic', file), 'utf8'));
    const model = createAnthropic({ baseURL: 'http://anthropic.test/v1', apiKey: 'test' })('claude');
    const result = await collectStream(aiSdkExecutor(model).stream(request));
    assertMatches(result, expectedAnthropic(current));
  });

  it('pins the content of a few captures', async () => {
    current = chunksOf(readFileSync(join(root, 'anthropic', 'anthropic-clear-thinking.1.chunks.jsonl'), 'utf8'));
    const model = createAnthropic({ baseURL: 'http://anthropic.test/v1', apiKey: 'test' })('claude');
    const r = await collectStream(aiSdkExecutor(model).stream(request));
    expect(r).toMatchObject({ content: [{ type: 'text', text: '925 ÷ 5 = 185' }], stopReason: 'EndTurn', usage: { prompt_tokens: 69, completion_tokens: 53 } });
    current = chunksOf(readFileSync(join(root, 'anthropic', 'anthropic-tool-no-args.chunks.jsonl'), 'utf8'));
    const t = await collectStream(aiSdkExecutor(model).stream(request));
    expect(t.toolCalls).toEqual([{ id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', name: 'updateIssueList', arguments: {} }]);
  });
});
