import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { catalogModel, CatalogError } from '../../src/providers/catalog.ts';
import { chunksOf, toSse } from '../../src/providers/cassette.ts';
import { collectStream } from '../../src/runtime/llm.ts';
import type { StreamResult } from '../../src/contract/stream.ts';

// Each catalog provider against a recorded wire stream of its own API (fixtures/provider/, from the
// provider packages' own test fixtures; PROVENANCE.md): the real provider package parses it, the
// adapter turns it into stream parts. The fetch the catalog is given stands in for the network.
const root = resolve(import.meta.dirname, '../../fixtures/provider');
const request = { model: 'm', messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }], tools: [] };

function recorded(file: string): { fetch: typeof fetch; calls: { url: string; headers: Headers }[] } {
  const chunks = chunksOf(readFileSync(join(root, file), 'utf8'));
  const calls: { url: string; headers: Headers }[] = [];
  const replay: typeof fetch = async (input, init) => {
    calls.push({ url: String(input instanceof Request ? input.url : input), headers: new Headers(init?.headers) });
    return new Response(toSse(chunks, 'openai-compatible'), { headers: { 'content-type': 'text/event-stream' } });
  };
  return { fetch: replay, calls };
}

/** The text of a stream's result. */
const textOf = (r: StreamResult): string => r.content.map((b) => (b.type === 'text' ? b.text : '')).join('');

const KEYS = { OPENAI_API_KEY: 'sk-o', GOOGLE_GENERATIVE_AI_API_KEY: 'g-key', MISTRAL_API_KEY: 'm-key', ANTHROPIC_API_KEY: 'a-key' };

describe('providers by name: provider:model through the AI SDK adapter', () => {
  it('openai:MODEL speaks the Responses API (a recorded gpt stream: two messages of text)', async () => {
    const wire = recorded('openai/openai-phase.1.chunks.jsonl');
    const model = await catalogModel('openai:gpt-4o-mini', KEYS, { fetch: wire.fetch });
    const r = await collectStream(model.llm.stream(request));
    expect(textOf(r)).toContain('Got it');
    expect(textOf(r)).toContain('Here are a few **AI');
    expect(wire.calls[0]?.url).toBe('https://api.openai.com/v1/responses');
    expect(wire.calls[0]?.headers.get('authorization')).toBe('Bearer sk-o');
    expect(model).toMatchObject({ name: 'gpt-4o-mini', note: 'openai (gpt-4o-mini) through the AI SDK adapter' });
  });

  it('google:MODEL speaks Gemini streamGenerateContent (recorded text, and a function call)', async () => {
    const text = recorded('google/google-text.chunks.jsonl');
    const t = await collectStream((await catalogModel('google:gemini-2.0-flash', KEYS, { fetch: text.fetch })).llm.stream(request));
    expect(textOf(t)).toBe('There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y');
    expect(text.calls[0]?.url).toBe('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
    expect(text.calls[0]?.headers.get('x-goog-api-key')).toBe('g-key');
    const call = recorded('google/google-tool-call.chunks.jsonl');
    const c = await collectStream((await catalogModel('google:gemini-3-pro-preview', KEYS, { fetch: call.fetch })).llm.stream(request));
    expect(c.toolCalls).toMatchObject([{ name: 'weather', arguments: { location: 'San Francisco' } }]);
  });

  it('mistral:MODEL speaks Mistral chat completions (recorded text, and a tool call)', async () => {
    const text = recorded('mistral/mistral-text.chunks.jsonl');
    const t = await collectStream((await catalogModel('mistral:mistral-small-latest', KEYS, { fetch: text.fetch })).llm.stream(request));
    expect(textOf(t)).toBe('Hello, world! This is a test response.');
    expect(text.calls[0]?.url).toBe('https://api.mistral.ai/v1/chat/completions');
    const call = recorded('mistral/mistral-tool-call.chunks.jsonl');
    const c = await collectStream((await catalogModel('mistral:mistral-small-latest', KEYS, { fetch: call.fetch })).llm.stream(request));
    expect(c.toolCalls).toEqual([{ id: 'gSIMJiOkT', name: 'weather', arguments: { location: 'San Francisco' } }]);
  });

  it('anthropic:MODEL and ollama:MODEL (OpenAI-compatible on the local port, no key)', async () => {
    const anthropic = recorded('anthropic/anthropic-text.chunks.jsonl');
    const chunks = chunksOf(readFileSync(join(root, 'anthropic/anthropic-text.chunks.jsonl'), 'utf8'));
    const anthropicFetch: typeof fetch = async (input, init) => {
      await anthropic.fetch(input, init);
      return new Response(toSse(chunks, 'anthropic'), { headers: { 'content-type': 'text/event-stream' } });
    };
    const a = await collectStream((await catalogModel('anthropic:claude-3-5-haiku-latest', KEYS, { fetch: anthropicFetch })).llm.stream(request));
    expect(textOf(a).length).toBeGreaterThan(0);
    expect(anthropic.calls[0]?.url).toBe('https://api.anthropic.com/v1/messages');
    const ollama = recorded('openai-compatible/azure-text.chunks.jsonl');
    const o = await collectStream((await catalogModel('ollama:qwen2.5', {}, { fetch: ollama.fetch })).llm.stream(request));
    expect(textOf(o)).toBe('Hello World');
    expect(ollama.calls[0]?.url).toBe('http://127.0.0.1:11434/v1/chat/completions');
    expect(
      await catalogModel('ollama:qwen2.5', { OLLAMA_BASE_URL: 'http://box:11434/v1' }, { fetch: ollama.fetch })
        .then((m) => collectStream(m.llm.stream(request)))
        .then(textOf),
    ).toBe('Hello World');
    expect(ollama.calls[1]?.url).toBe('http://box:11434/v1/chat/completions');
  });

  it('an unknown provider and a missing key are typed errors naming what to do', async () => {
    await expect(catalogModel('cohere:command-r', KEYS)).rejects.toThrow(
      new CatalogError(
        'unknown_provider',
        "'cohere:command-r' names no provider: use openai:MODEL, anthropic:MODEL, google:MODEL, mistral:MODEL, ollama:MODEL, scripted:FILE or transcript:FILE",
      ),
    );
    await expect(catalogModel('openai:', KEYS)).rejects.toMatchObject({ reason: 'unknown_provider' });
    await expect(catalogModel('mistral:mistral-small-latest', {})).rejects.toThrow('mistral:mistral-small-latest needs its API key in MISTRAL_API_KEY');
  });
});
