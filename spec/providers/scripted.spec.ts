import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelFactoryOf } from '../../src/cli/run-plan.ts';
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

describe('what a ScriptedLlm keeps', () => {
  it('records every request by default (for a test to look at), none with record: false', async () => {
    const recording = new ScriptedLlm(parseScript('- { text: a }\n- { text: b }'));
    const quiet = new ScriptedLlm(parseScript('- { text: a }\n- { text: b }'), { record: false });
    for (const llm of [recording, quiet]) for (let i = 0; i < 2; i++) for await (const _ of llm.stream(request())) void _;
    expect(recording.requests).toHaveLength(2);
    expect(quiet.requests).toHaveLength(0);
  });

  it('the model `scripted:FILE` names (awaken serve, awaken run) keeps no request: a long-lived server would hold every thread history it was sent', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'awaken-script-')), 'script.yaml');
    writeFileSync(file, '- { text: a }\n- { text: b }\n');
    const llm = modelFactoryOf(`scripted:${file}`)() as ScriptedLlm;
    for (let i = 0; i < 2; i++) for await (const _ of llm.stream(request())) void _;
    expect(llm).toBeInstanceOf(ScriptedLlm);
    expect(llm.requests).toHaveLength(0);
  });
});
