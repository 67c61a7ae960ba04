import { describe, expect, it } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { InferenceFailure } from '../../src/runtime/llm.ts';
import { parseScript, ScriptedLlm } from '../../src/providers/scripted.ts';

const request = (signal?: AbortSignal) => ({ model: 'm', tools: [], messages: [Messages.user('hi')], ...(signal !== undefined ? { signal } : {}) });

describe('ScriptedLlm delay_ms (a slow model, a long stream)', () => {
  it('waits before each part', async () => {
    const llm = new ScriptedLlm(parseScript('- { text: [a, b, c], delay_ms: 40 }'));
    const started = Date.now();
    const parts: string[] = [];
    for await (const p of llm.stream(request())) parts.push(p.type);
    expect(parts).toEqual(['text_delta', 'text_delta', 'text_delta', 'finish']);
    // Four parts, 40 ms before each: a generous lower bound, no upper one.
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it('a cancelled request stops waiting at once and fails cancelled', async () => {
    const llm = new ScriptedLlm(parseScript('- { text: [a, b], delay_ms: 60000 }'));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const parts: string[] = [];
    const run = (async () => {
      for await (const p of llm.stream(request(controller.signal))) parts.push(p.type);
    })();
    await expect(run).rejects.toBeInstanceOf(InferenceFailure);
    expect(parts).toEqual([]);
  });

  it('refuses a delay out of range, naming the field', () => {
    expect(() => parseScript('- { text: a, delay_ms: -1 }')).toThrow(/delay_ms/);
  });
});
