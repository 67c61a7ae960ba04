// The worked plugin of docs/plugins.md, as written there (the first spec checks that every line of it
// and of its registration is here).
import { z } from 'zod';
import { defineStateKey, StateCommand, ToolInterceptAction, type RuntimePlugin } from 'awaken-ts';

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
      // The gate: the call does not run, the model reads the reason, and the run goes on.
      return cmd.scheduleAction(ToolInterceptAction, {
        call_id: ctx.input.toolCall.id,
        intercept: { type: 'refuse', reason: `tool budget of ${max} calls used up` },
      });
    });
    // A hook that changes nothing returns nothing.
    r.registerPhaseHook('run_end', (ctx) => {
      console.log(`run ${ctx.input.runId}: ${ctx.snapshot.getOrDefault(CallsSeen)} tool calls`);
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
const worked = guide.slice(guide.indexOf('### A worked plugin'));
const blocks = [...worked.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => (m[1] as string).split('\n'));
const [snippet = [], registration = []] = blocks;

describe('docs/plugins.md: the worked plugin', () => {
  it('is the code this spec runs, line for line, and so is its registration', () => {
    const source = readFileSync(import.meta.filename, 'utf8');
    expect(snippet.length).toBeGreaterThan(20);
    for (const line of snippet.filter((l) => l.trim() !== ''))
      expect(source.includes(line.replace('export const toolBudget', 'const toolBudget')), line).toBe(true);
    expect(registration.filter((l) => l.trim() !== '' && !l.trim().startsWith('// …')).length).toBe(4);
    for (const line of registration.filter((l) => l.trim() !== '' && !l.trim().startsWith('// …'))) expect(source.includes(line), line).toBe(true);
  });

  it('lets three calls run, refuses the fourth with the reason the model reads, goes on, and counts four', async () => {
    const calls = Array.from({ length: 4 }, (_, i) => ({ id: `c${i}`, name: 'echo', arguments: { text: `${i}` } }));
    const llm = new ScriptedLlm([...calls.map((c) => ({ tool_calls: [c] })), { text: 'done' }]);
    const logged: string[] = [];
    const log = console.log;
    console.log = (line: string) => void logged.push(line);
    const sink = new VecEventSink();
    try {
      const runtime = new AgentRuntimeBuilder()
        .withEnv(deterministicEnv())
        .withProvider('p', llm)
        .withModel('m', { provider: 'p', model_name: 'm' })
        .withTool(echoTool)
        .withPlugin('tool_budget', toolBudget(3))
        .withAgentSpec({ id: 'agent', model: 'm', plugin_ids: ['tool_budget'] })
        .buildOrThrow();
      const r = await runtime.run({ messages: [Messages.user('go')] }, sink);
      expect(r.ok && r.value.termination).toEqual({ type: 'natural_end' });
      expect(r.ok && r.value.response).toBe('done');
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
    expect(done[3]?.result).toEqual({
      tool_name: 'echo',
      status: 'error',
      data: null,
      message: 'tool budget of 3 calls used up',
      metadata: { rejected: true },
    });
    // What the model read for the refused call, at the inference after it.
    expect(llm.requests[4]?.messages.at(-1)).toMatchObject({
      role: 'tool',
      tool_call_id: 'c3',
      content: [{ type: 'text', text: 'tool budget of 3 calls used up' }],
    });
    expect(logged).toEqual([expect.stringMatching(/^run \S+: 4 tool calls$/)]);
  });
});
