import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC,
  GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI,
  GEN_AI_PROVIDER_NAME_VALUE_MISTRAL_AI,
  GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
} from '@opentelemetry/semantic-conventions/incubating';
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { aiSdkExecutor, providerNameOf, serverOf } from '../../src/providers/ai-sdk.ts';
import { CATALOG, catalogModel } from '../../src/providers/catalog.ts';
import { chunksOf, toSse, type CassetteFormat } from '../../src/providers/cassette.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import type { LlmExecutor } from '../../src/runtime/llm.ts';
import type { TappedInference } from '../../src/runtime/tap.ts';

// What the provider said of its answer (its id, the model it says answered) and of itself (its name
// in the GenAI semantic conventions, the host and port it was reached at), from the provider
// package's own parsing of a recorded wire stream served over HTTP by msw, to a plugin's tap.
const root = resolve(import.meta.dirname, '../../fixtures');
const chunks = (file: string): string[] => chunksOf(readFileSync(join(root, file), 'utf8'));

/** The chunks each URL answers with (set per test), served in the provider's SSE framing. */
type Answer = { chunks: readonly string[]; format: CassetteFormat; status?: number };
/** An answer, or answers in turn (one per request). */
const wire = new Map<string, Answer | Answer[]>();
const server = setupServer(
  http.post(/.*/, ({ request }) => {
    const entry = wire.get(request.url);
    const answer = Array.isArray(entry) ? entry.shift() : entry;
    if (answer === undefined) return new HttpResponse(`no cassette for ${request.url}`, { status: 599 });
    if (answer.status !== undefined) return HttpResponse.json({ error: { message: 'overloaded', type: 'server_error' } }, { status: answer.status });
    return new HttpResponse(toSse(answer.chunks, answer.format), { headers: { 'content-type': 'text/event-stream' } });
  }),
);
beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => wire.clear());
afterAll(() => server.close());

/** One run of an agent on `llm` (its model `asked`), and what its plugin's tap was told of each inference. */
async function tapped(llm: LlmExecutor, asked: string, sections: Record<string, unknown> = {}): Promise<TappedInference[]> {
  const inferences: TappedInference[] = [];
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('p', llm)
    .withModel('m', { provider: 'p', model_name: asked })
    .withPlugin('watch', { name: 'watch', register: () => undefined, tap: () => ({ inference: (i) => void inferences.push(i) }) })
    .withAgentSpec({ id: 'a', model: 'm', plugin_ids: ['watch'], sections })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  await built.value.run({ messages: [Messages.user('hi')] }, new VecEventSink());
  return inferences;
}

/** The fields a tapped inference names the provider's answer and the provider with. */
const facts = (i: TappedInference | undefined): { [K in 'providerName' | 'responseId' | 'responseModel' | 'server']: TappedInference[K] | undefined } => ({
  providerName: i?.providerName,
  responseId: i?.responseId,
  responseModel: i?.responseModel,
  server: i?.server,
});

const KEYS = { OPENAI_API_KEY: 'sk-o', ANTHROPIC_API_KEY: 'a-key', GOOGLE_GENERATIVE_AI_API_KEY: 'g-key', MISTRAL_API_KEY: 'm-key' };

describe('catalog providers: the answer and the provider reach the tap', () => {
  it('openai: the Responses API answer names its id and the model that answered, not the one asked', async () => {
    wire.set('http://openai.test:8080/v1/responses', { chunks: chunks('provider/openai/openai-phase.1.chunks.jsonl'), format: 'openai-compatible' });
    const { llm } = await catalogModel('openai:gpt-4o-mini', { ...KEYS, OPENAI_BASE_URL: 'http://openai.test:8080/v1' });
    const [i] = await tapped(llm, 'gpt-4o-mini');
    expect(facts(i)).toEqual({
      providerName: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
      responseId: 'resp_0a63f40a2632b74300699f8818e5648196a8fa657ae8091421',
      responseModel: 'gpt-5.3-codex',
      server: { address: 'openai.test', port: 8080 },
    });
    expect(i?.request.model).toBe('gpt-4o-mini');
    expect(i?.output?.text).toContain('Got it');
  });

  it('anthropic: the message id and model of message_start; the default port of an https URL', async () => {
    wire.set('https://anthropic.test/v1/messages', { chunks: chunks('provider/anthropic/anthropic-text.chunks.jsonl'), format: 'anthropic' });
    const { llm } = await catalogModel('anthropic:claude-sonnet-4-5', { ...KEYS, ANTHROPIC_BASE_URL: 'https://anthropic.test/v1' });
    const [i] = await tapped(llm, 'claude-sonnet-4-5');
    expect(facts(i)).toEqual({
      providerName: GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC,
      responseId: 'msg_01QC4g3HwBThD4BaNtBckFDJ',
      responseModel: 'claude-sonnet-4-5-20250929',
      server: { address: 'anthropic.test', port: 443 },
    });
    expect(i?.output).toEqual({ text: expect.stringContaining('help you with?') as string, toolCalls: [] });
  });

  it('google: the responseId (the package reports no model), at its default endpoint', async () => {
    wire.set('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse', {
      chunks: chunks('provider/google/google-text.chunks.jsonl'),
      format: 'openai-compatible',
    });
    const { llm } = await catalogModel('google:gemini-2.0-flash', KEYS);
    const [i] = await tapped(llm, 'gemini-2.0-flash');
    expect(facts(i)).toEqual({
      providerName: GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI,
      responseId: 'bH6LaZW8Fp_3nsEPqtaSwQ4',
      responseModel: undefined,
      server: { address: 'generativelanguage.googleapis.com', port: 443 },
    });
  });

  it('google without a responseId: the provider and where it was reached are still told', async () => {
    const anonymous = chunks('provider/google/google-text.chunks.jsonl').map((c) => c.replace(/,"responseId":"[^"]*"/, ''));
    expect(anonymous.join('\n')).not.toContain('responseId');
    wire.set('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse', {
      chunks: anonymous,
      format: 'openai-compatible',
    });
    const { llm } = await catalogModel('google:gemini-2.0-flash', KEYS);
    const [i] = await tapped(llm, 'gemini-2.0-flash');
    expect(facts(i)).toEqual({
      providerName: GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI,
      responseId: undefined,
      responseModel: undefined,
      server: { address: 'generativelanguage.googleapis.com', port: 443 },
    });
  });

  it('mistral: the chunk id and model, and the tool calls it answered with', async () => {
    wire.set('http://mistral.test/v1/chat/completions', { chunks: chunks('provider/mistral/mistral-tool-call.chunks.jsonl'), format: 'openai-compatible' });
    const { llm } = await catalogModel('mistral:mistral-small-latest', { ...KEYS, MISTRAL_BASE_URL: 'http://mistral.test/v1' });
    const first = JSON.parse(chunks('provider/mistral/mistral-tool-call.chunks.jsonl')[0] as string) as { id: string; model: string };
    const [i] = await tapped(llm, 'mistral-small-latest');
    expect(facts(i)).toEqual({
      providerName: GEN_AI_PROVIDER_NAME_VALUE_MISTRAL_AI,
      responseId: first.id,
      responseModel: first.model,
      server: { address: 'mistral.test', port: 80 },
    });
    expect(i?.output?.toolCalls.length).toBeGreaterThan(0);
  });

  it('ollama: the OpenAI chat API it speaks names it (the conventions have no Ollama), its own host and port', async () => {
    wire.set('http://127.0.0.1:11434/v1/chat/completions', {
      chunks: chunks('cassettes/openai-compatible-weather-answer.chunks.jsonl'),
      format: 'openai-compatible',
    });
    const { llm } = await catalogModel('ollama:qwen2.5', {});
    const [i] = await tapped(llm, 'qwen2.5');
    expect(facts(i)).toEqual({
      providerName: GEN_AI_PROVIDER_NAME_VALUE_OPENAI,
      responseId: 'chatcmpl-awaken-2',
      responseModel: 'awaken-fake',
      server: { address: '127.0.0.1', port: 11434 },
    });
    expect(i?.output).toEqual({ text: 'It is sunny in Oslo, 10 °C.', toolCalls: [] });
  });

  it('the endpoint the facts name is the one reached: the environment the catalog is given, never the process environment the package would read', async () => {
    vi.stubEnv('OPENAI_BASE_URL', 'http://elsewhere.test/v1');
    try {
      wire.set('https://api.openai.com/v1/responses', { chunks: chunks('provider/openai/openai-phase.1.chunks.jsonl'), format: 'openai-compatible' });
      const { llm } = await catalogModel('openai:gpt-4o-mini', KEYS);
      const [i] = await tapped(llm, 'gpt-4o-mini');
      expect(i?.error).toBeUndefined();
      expect(i?.server).toEqual({ address: 'api.openai.com', port: 443 });
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('every catalog provider has a conventions name and a default endpoint that parses', () => {
    for (const [id, entry] of Object.entries(CATALOG)) {
      expect(
        [GEN_AI_PROVIDER_NAME_VALUE_OPENAI, GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC, GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI, GEN_AI_PROVIDER_NAME_VALUE_MISTRAL_AI],
        id,
      ).toContain(entry.providerName);
      expect(serverOf(entry.defaultBaseUrl), id).toBeDefined();
    }
  });
});

describe('docs/providers.md', () => {
  it('names each catalog provider and its default endpoint as the catalog does', () => {
    const doc = readFileSync(resolve(import.meta.dirname, '../../docs/providers.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## What the provider says of its answer'), doc.indexOf('## Wire cassettes'));
    for (const [id, entry] of Object.entries(CATALOG)) {
      const row = section.split('\n').find((l) => l.startsWith(`| \`${id}:MODEL\``));
      expect(row, id).toBeDefined();
      const cells = (row as string).split(' | ');
      expect(cells[1]?.startsWith(`\`${entry.providerName}\``), `${id}: ${cells[1]}`).toBe(true);
      const server = serverOf(entry.defaultBaseUrl);
      expect(cells[4], id).toContain(`${server?.address}:${server?.port}`);
      expect(cells[4], id).toContain(`\`${entry.baseUrlEnv}\``);
    }
  });
});

describe('aiSdkExecutor: what a model says of itself, and what it is told', () => {
  it('an OpenAI-compatible server answering another model than asked: the facts given name the provider and its server', async () => {
    wire.set('http://compat.test:9000/v1/chat/completions', {
      chunks: chunks('cassettes/openai-compatible-weather-answer.chunks.jsonl').map((c) => c.replace('"model":"awaken-fake"', '"model":"fake-model-0001"')),
      format: 'openai-compatible',
    });
    const model = createOpenAICompatible({ name: 'configured', baseURL: 'http://compat.test:9000/v1', apiKey: 'k', includeUsage: true })('gpt-4o-mini');
    const [given] = await tapped(aiSdkExecutor(model, { providerName: 'openai', baseURL: 'http://compat.test:9000/v1' }), 'gpt-4o-mini');
    expect(facts(given)).toEqual({
      providerName: 'openai',
      responseId: 'chatcmpl-awaken-2',
      responseModel: 'fake-model-0001',
      server: { address: 'compat.test', port: 9000 },
    });
    // Told nothing, its family (`configured.chat`) names no provider and its URL is its own: the answer's facts alone.
    const [bare] = await tapped(aiSdkExecutor(model), 'gpt-4o-mini');
    expect(facts(bare)).toEqual({ providerName: undefined, responseId: 'chatcmpl-awaken-2', responseModel: 'fake-model-0001', server: undefined });
  });

  it('a model of a known family is named by it (`openai.responses` → openai) without being told', async () => {
    wire.set('http://openai.test/v1/responses', { chunks: chunks('provider/openai/openai-phase.1.chunks.jsonl'), format: 'openai-compatible' });
    const [i] = await tapped(aiSdkExecutor(createOpenAI({ apiKey: 'k', baseURL: 'http://openai.test/v1' })('gpt-4o-mini')), 'gpt-4o-mini');
    expect(facts(i)).toMatchObject({ providerName: 'openai', responseModel: 'gpt-5.3-codex', server: undefined });
  });

  it('a failure before the stream opened: no answer, no facts of it (the retry policy may still try another provider)', async () => {
    wire.set('http://compat.test/v1/chat/completions', { chunks: [], format: 'openai-compatible', status: 500 });
    const model = createOpenAICompatible({ name: 'configured', baseURL: 'http://compat.test/v1', apiKey: 'k' })('m');
    const [i] = await tapped(aiSdkExecutor(model, { providerName: 'openai', baseURL: 'http://compat.test/v1' }), 'm');
    expect(i?.error?.code).toBe('provider');
    expect(i?.output).toBeUndefined();
    expect(facts(i)).toEqual({ providerName: undefined, responseId: undefined, responseModel: undefined, server: undefined });
  });

  it('a failure after the provider described its answer but before any content is still retried; the answer that came is the one told', async () => {
    const text = chunks('provider/anthropic/anthropic-text.chunks.jsonl');
    const overloaded = [
      (text[0] as string).replace('msg_01QC4g3HwBThD4BaNtBckFDJ', 'msg_overloaded'),
      '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    ];
    wire.set('https://anthropic.test/v1/messages', [
      { chunks: overloaded, format: 'anthropic' },
      { chunks: text, format: 'anthropic' },
    ]);
    const { llm } = await catalogModel('anthropic:claude-sonnet-4-5', { ...KEYS, ANTHROPIC_BASE_URL: 'https://anthropic.test/v1' });
    const inferences = await tapped(llm, 'claude-sonnet-4-5', { retry: { max_retries: 1, backoff_base_ms: 0 } });
    expect(inferences).toHaveLength(1);
    expect(inferences[0]?.error).toBeUndefined();
    expect(inferences[0]?.responseId).toBe('msg_01QC4g3HwBThD4BaNtBckFDJ');
    expect(wire.get('https://anthropic.test/v1/messages')).toEqual([]);
  });

  it('a failure after the provider answered: its facts are told, its answer is not', async () => {
    // message_start, the text block's start, a ping, its first text; then the error.
    const broken = [
      ...chunks('provider/anthropic/anthropic-text.chunks.jsonl').slice(0, 4),
      '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    ];
    wire.set('https://anthropic.test/v1/messages', { chunks: broken, format: 'anthropic' });
    const { llm } = await catalogModel('anthropic:claude-sonnet-4-5', { ...KEYS, ANTHROPIC_BASE_URL: 'https://anthropic.test/v1' });
    const [i] = await tapped(llm, 'claude-sonnet-4-5');
    expect(i?.error).toBeDefined();
    expect(i?.output).toBeUndefined();
    expect(facts(i)).toEqual({
      providerName: 'anthropic',
      responseId: 'msg_01QC4g3HwBThD4BaNtBckFDJ',
      responseModel: 'claude-sonnet-4-5-20250929',
      server: { address: 'anthropic.test', port: 443 },
    });
  });
});

describe('providerNameOf and serverOf', () => {
  it('names the families the conventions name, and no other', () => {
    expect(
      [
        'openai.chat',
        'openai.responses',
        'anthropic.messages',
        'google.generative-ai',
        'google.vertex.chat',
        'mistral.chat',
        'azure.chat',
        'ollama.chat',
        'configured.chat',
      ].map(providerNameOf),
    ).toEqual(['openai', 'openai', 'anthropic', 'gcp.gemini', 'gcp.vertex_ai', 'mistral_ai', 'azure.ai.openai', undefined, undefined]);
  });

  it('the host and port of a base URL: its own port, else the scheme default; an IPv6 host without brackets; nothing of a URL that does not parse', () => {
    expect(serverOf('http://localhost:11434/v1')).toEqual({ address: 'localhost', port: 11434 });
    expect(serverOf('https://user:secret@api.example.com/v1')).toEqual({ address: 'api.example.com', port: 443 });
    expect(serverOf('http://[::1]:8080/v1')).toEqual({ address: '::1', port: 8080 });
    expect(serverOf('not a url')).toBeUndefined();
    expect(serverOf(undefined)).toBeUndefined();
  });
});
