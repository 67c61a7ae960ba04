// The worked plugin of docs/plugins.md, as written there (the first spec checks that every line of it is here).
import { z } from 'zod';
import {
  defineStateKey,
  StateCommand,
  ToolInterceptAction,
  type RuntimePlugin,
} from 'awaken-ts';

/** Calls seen in this run (run-scoped: a new run starts at 0). */
const CallsSeen = defineStateKey<number, number>({
  key: 'tool_budget.calls',
  init: () => 0,
  apply: (n, by) => n + by,
  codec: z.number().int().nonnegative(),
});

const toolBudget = (max: number): RuntimePlugin => ({
  name: 'tool_budget',
  register: (r) => {
    r.registerKey(CallsSeen);
    r.registerPhaseHook('before_tool_execute', (ctx) => {
      const seen = ctx.snapshot.getOrDefault(CallsSeen);
      const cmd = StateCommand.empty().update(CallsSeen, 1);
      if (seen < max) return cmd;
      // The gate: the call does not run, and the run ends `blocked` with this reason.
      return cmd.scheduleAction(ToolInterceptAction, {
        call_id: ctx.input.toolCall.id,
        intercept: { type: 'block', reason: `tool budget of ${max} calls used up` },
      });
    });
    r.registerPhaseHook('run_end', (ctx) => {
      console.log(`run ${ctx.input.runId}: ${ctx.snapshot.getOrDefault(CallsSeen)} tool calls`);
      return StateCommand.empty();
    });
  },
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentRuntimeBuilder, deterministicEnv, Messages, VecEventSink, type AgentEvent } from 'awaken-ts';
import { ScriptedLlm } from '../../src/providers/scripted.ts';
import { echoTool } from '../support/runtime.ts';

const guide = readFileSync(join(import.meta.dirname, '../../docs/plugins.md'), 'utf8');
const snippet = (/```ts\n(import \{ z \} from 'zod';[\s\S]*?)```/.exec(guide)?.[1] ?? '').split('\n');

describe('docs/plugins.md: the worked plugin', () => {
  it('is the code this spec runs, line for line', () => {
    const source = readFileSync(import.meta.filename, 'utf8');
    expect(snippet.length).toBeGreaterThan(20);
    for (const line of snippet.filter((l) => l.trim() !== '')) expect(source.includes(line.replace('export const toolBudget', 'const toolBudget')), line).toBe(true);
  });

  it('lets three calls run, blocks the fourth with the reason, and counts four', async () => {
    const calls = Array.from({ length: 4 }, (_, i) => ({ id: `c${i}`, name: 'echo', arguments: { text: `${i}` } }));
    const llm = new ScriptedLlm([...calls.map((c) => ({ tool_calls: [c] })), { text: 'done' }]);
    const built = new AgentRuntimeBuilder()
      .withEnv(deterministicEnv())
      .withProvider('p', llm)
      .withModel('m', { provider: 'p', model_name: 'm' })
      .withTool(echoTool)
      .withPlugin('tool_budget', toolBudget(3))
      .withAgentSpec({ id: 'agent', model: 'm', plugin_ids: ['tool_budget'] })
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    const sink = new VecEventSink();
    const logged: string[] = [];
    const log = console.log;
    console.log = (line: string) => void logged.push(line);
    try {
      const r = await built.value.run({ messages: [Messages.user('go')] }, sink);
      expect(r.ok && r.value.termination).toEqual({ type: 'blocked', value: 'tool budget of 3 calls used up' });
    } finally {
      console.log = log;
    }
    const done = sink.events.filter((e): e is Extract<AgentEvent, { event_type: 'tool_call_done' }> => e.event_type === 'tool_call_done');
    expect(done.map((d) => [d.id, d.outcome])).toEqual([
      ['c0', 'succeeded'],
      ['c1', 'succeeded'],
      ['c2', 'succeeded'],
      ['c3', 'failed'],
    ]);
    expect(done[3]?.result.message).toBe('tool budget of 3 calls used up');
    expect(logged).toEqual([expect.stringMatching(/: 4 tool calls$/)]);
  });
});
