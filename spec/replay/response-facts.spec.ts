import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getWeather } from '../../src/cli/demo.ts';
import { Messages } from '../../src/contract/message.ts';
import { aiSdkExecutor } from '../../src/providers/ai-sdk.ts';
import { chunksOf } from '../../src/providers/cassette.ts';
import { recordRun } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { LlmRecordSchema, TRANSCRIPT_FORMAT } from '../../src/replay/transcript.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import type { TappedInference } from '../../src/runtime/tap.ts';
import { cassetteServer } from '../support/cassettes.ts';

// A run recorded against an OpenAI-compatible server that answers under another model's name than
// the one asked, then replayed from its transcript alone: what the provider said of its answers and
// of itself is in the transcript, and the replay's tap is told exactly what the recorded run's was.
const dir = resolve(import.meta.dirname, '../../fixtures/cassettes');
const renamed = (file: string): string[] =>
  chunksOf(readFileSync(join(dir, file), 'utf8')).map((c) => c.replace('"model":"awaken-fake"', '"model":"fake-model-0001"'));
const answers = [renamed('openai-compatible-weather-tool.chunks.jsonl'), renamed('openai-compatible-weather-answer.chunks.jsonl')];
let turn = 0;
const server = cassetteServer('http://compat.test:8000/v1/chat/completions', () => answers[turn++] ?? [], 'openai-compatible');
beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterAll(() => server.close());

/** A plugin whose tap keeps every inference it is told of. */
const watching = (into: TappedInference[]): RuntimePlugin => ({
  name: 'watch',
  register: () => undefined,
  tap: () => ({ inference: (i) => void into.push(i) }),
});
/** A tapped inference without its request (the request's signal is the run's own object). */
const told = (i: TappedInference): Omit<TappedInference, 'request'> & { model: string } => {
  const { request, ...rest } = i;
  return { ...rest, model: request.model };
};

describe('response facts across a recording and its replay', () => {
  it('the transcript holds what the provider said; the replay taps the same facts without reaching it', async () => {
    const recorded: TappedInference[] = [];
    const model = createOpenAICompatible({ name: 'configured', baseURL: 'http://compat.test:8000/v1', apiKey: 'k', includeUsage: true })('gpt-4o-mini');
    const { transcript } = await recordRun({
      agent: { id: 'a', model: 'm', system_prompt: 'Use tools.', plugin_ids: ['watch'] },
      models: { m: { provider: 'compat', model_name: 'gpt-4o-mini' } },
      providers: { compat: aiSdkExecutor(model, { providerName: 'openai', baseURL: 'http://compat.test:8000/v1' }) },
      tools: [getWeather],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 0 } },
      request: { messages: [Messages.user('Weather in Oslo?')] },
      plugins: [watching(recorded)],
    });
    expect(server.requests).toHaveLength(2);
    expect(transcript.startsWith(`{"type":"header","format":"${TRANSCRIPT_FORMAT}",`)).toBe(true);
    expect(TRANSCRIPT_FORMAT).toBe('awaken-transcript/12');

    const llm = transcript
      .split('\n')
      .filter((l) => l.startsWith('{"type":"llm"'))
      .map((l) => LlmRecordSchema.parse(JSON.parse(l)));
    expect(llm.map((r) => r.parts.filter((p) => p.type === 'response_metadata'))).toEqual([
      [
        {
          type: 'response_metadata',
          id: 'chatcmpl-awaken-1',
          model: 'fake-model-0001',
          provider_name: 'openai',
          server: { address: 'compat.test', port: 8000 },
        },
      ],
      [
        {
          type: 'response_metadata',
          id: 'chatcmpl-awaken-2',
          model: 'fake-model-0001',
          provider_name: 'openai',
          server: { address: 'compat.test', port: 8000 },
        },
      ],
    ]);
    expect(recorded.map((i) => [i.request.model, i.responseModel, i.responseId])).toEqual([
      ['gpt-4o-mini', 'fake-model-0001', 'chatcmpl-awaken-1'],
      ['gpt-4o-mini', 'fake-model-0001', 'chatcmpl-awaken-2'],
    ]);
    expect(recorded[0]?.output?.toolCalls.map((c) => c.name)).toEqual(['get_weather']);
    expect(recorded[1]?.output).toEqual({ text: 'It is sunny in Oslo, 10 °C.', toolCalls: [] });

    const replayed: TappedInference[] = [];
    const report = await replayTranscript(transcript, { app: { plugins: [watching(replayed)] } });
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(server.requests).toHaveLength(2);
    expect(replayed.map(told)).toEqual(recorded.map(told));
    // docs/transcript-format.md shows this run's second part as it is written.
    const doc = readFileSync(resolve(import.meta.dirname, '../../docs/transcript-format.md'), 'utf8');
    const shown = /### What the provider said[\s\S]*?```json\n(.*)\n```/.exec(doc)?.[1];
    expect(shown).toBe(JSON.stringify(llm[1]?.parts.find((p) => p.type === 'response_metadata')));
    expect(transcript.split('\n').find((l) => l.startsWith('{"type":"llm","seq":2'))).toContain(shown);
    expect(replayed.map((i) => i.server)).toEqual([
      { address: 'compat.test', port: 8000 },
      { address: 'compat.test', port: 8000 },
    ]);
  });

  it('a replay whose transcript says another answer id taps that id: the facts are the transcript’s, not the replaying code’s', async () => {
    turn = 0;
    const model = createOpenAICompatible({ name: 'configured', baseURL: 'http://compat.test:8000/v1', apiKey: 'k', includeUsage: true })('gpt-4o-mini');
    const { transcript } = await recordRun({
      agent: { id: 'a', model: 'm', plugin_ids: ['watch'] },
      models: { m: { provider: 'compat', model_name: 'gpt-4o-mini' } },
      providers: { compat: aiSdkExecutor(model, { providerName: 'openai', baseURL: 'http://compat.test:8000/v1' }) },
      tools: [getWeather],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, tick: 0 } },
      request: { messages: [Messages.user('Weather in Oslo?')] },
      plugins: [watching([])],
    });
    const edited = transcript.replace('"id":"chatcmpl-awaken-1"', '"id":"chatcmpl-edited"');
    expect(edited).not.toBe(transcript);
    const replayed: TappedInference[] = [];
    await replayTranscript(edited, { app: { plugins: [watching(replayed)] } });
    expect(replayed[0]?.responseId).toBe('chatcmpl-edited');
  });
});
