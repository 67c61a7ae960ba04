import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Messages } from '../../src/contract/message.ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { recordRun } from '../../src/replay/recorder.ts';
import { replayTranscript } from '../../src/replay/replayer.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { echoTool } from '../support/runtime.ts';

/**
 * Recording runs each tool call in an async context, so that a delegate's sub-run inside the call is
 * not written as the run's own traffic. Once any async context has been entered, Node hooks every
 * promise of the process (for good). A replay's tools answer from their records and make no
 * sub-run, so a replay enters none: `awaken replay` pays for no hook.
 */
afterEach(() => {
  vi.restoreAllMocks();
});

const corpus = join(import.meta.dirname, '../../fixtures/runs');

describe('the async context of a tool call', () => {
  it('is entered for each call a recording makes', async () => {
    const run = vi.spyOn(AsyncLocalStorage.prototype, 'run');
    await recordRun({
      agent: { id: 'a', model: 'm', system_prompt: 'x' },
      models: { m: { provider: 'p', model_name: 'pm' } },
      providers: {
        p: new ScriptedLlm([
          { tool_calls: [{ id: 'c1', name: 'echo', arguments: { text: 'one' } }] },
          { tool_calls: [{ id: 'c2', name: 'echo', arguments: { text: 'two' } }] },
          { text: 'done' },
        ]),
      },
      tools: [echoTool],
      env: { env: deterministicEnv(), header: { kind: 'deterministic', start: 1_700_000_000_000, seed: 0, tick: 0 } },
      request: { messages: [Messages.user('go')] },
    });
    expect(run).toHaveBeenCalledTimes(2);
  });

  it.each(['03-one-tool.jsonl', '05-parallel-tools-parallel-streaming.jsonl', '41-delegation-local.jsonl'])(
    'is never entered by a replay (%s), which still replays identical',
    async (file) => {
      const run = vi.spyOn(AsyncLocalStorage.prototype, 'run');
      const report = await replayTranscript(readFileSync(join(corpus, file), 'utf8'));
      expect(report.identical).toBe(true);
      expect(run).not.toHaveBeenCalled();
    },
  );
});
