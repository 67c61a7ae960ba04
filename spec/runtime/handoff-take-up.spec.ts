import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { Messages, messageText, type Message } from '../../src/contract/message.ts';
import type { StreamPart } from '../../src/contract/stream.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { handoffPlugin, HandoffState, requestHandoff } from '../../src/plugins/handoff.ts';
import { StateCommand } from '../../src/core/state/state-command.ts';
import { defineStateKey } from '../../src/core/state/state-key.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { AgentRuntimeBuilder } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import { MemoryThreadRunStore, type ThreadRunStore } from '../../src/runtime/thread-run-store.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { checkRunInvariants, PartStream } from '../../src/testing/index.ts';
import { DyingStore } from '../support/dying-store.ts';

/**
 * A run that a handoff had given to another agent, taken up from the store after its process died
 * at each of its writes: it goes on as the agent the handoff left active — its prompt, its model,
 * its tools — from the first thing it does, a tool batch inside the step that was cut off included.
 */

type Asked = { readonly model: string; readonly system: string; readonly tools: readonly string[]; readonly after: string };

/** A model that answers from the history alone, and notes who asked it what. */
function model(name: string, asked: Asked[]) {
  return {
    name,
    stream: (request: { readonly model: string; readonly messages: readonly Message[]; readonly tools: readonly { readonly id: string }[] }) => {
      const last = request.messages.at(-1);
      const after = last?.role === 'tool' ? `tool ${last.tool_call_id}` : (last?.role ?? 'none');
      const system = request.messages.find((m) => m.role === 'system');
      asked.push({ model: request.model, system: system === undefined ? '' : messageText(system), tools: request.tools.map((t) => t.id), after });
      const call = (id: string, tool: string, args: string): StreamPart[] => [
        { type: 'tool_call_start', id, name: tool },
        { type: 'tool_call_delta', id, args_delta: args },
        { type: 'finish', stop_reason: 'ToolUse' },
      ];
      const parts: StreamPart[] =
        after === 'user'
          ? call('c1', 'hand_over', '{"agent":"writer"}')
          : after === 'tool c1'
            ? call('c2', 'lookup', '{"n":2}')
            : [
                { type: 'text_delta', delta: `${name} answered` },
                { type: 'finish', stop_reason: 'EndTurn' },
              ];
      return new PartStream(parts);
    },
  };
}

function runtimeOn(store: ThreadRunStore, asked: Asked[], lookups: { n: number }, approval = false) {
  const plugin = handoffPlugin({}, { tool: false });
  const handOver = defineTool({
    id: 'hand_over',
    description: 'Hand the conversation over',
    args: z.object({ agent: z.string() }),
    recovery: 'replay_safe',
    execute: ({ agent }) => ({
      result: ToolResults.success('hand_over', { agent }),
      command: StateCommand.empty().update(HandoffState, requestHandoff(agent)),
    }),
  });
  const built = new AgentRuntimeBuilder()
    .withEnv(deterministicEnv())
    .withProvider('front', model('front', asked))
    .withProvider('back', model('back', asked))
    .withModel('m', { provider: 'front', model_name: 'front-model' })
    .withModel('m2', { provider: 'back', model_name: 'back-model' })
    .withThreadRunStore(store)
    .withTool(handOver)
    .withTool(
      defineTool({
        id: 'lookup',
        description: 'Look it up',
        args: z.object({ n: z.number() }),
        recovery: 'replay_safe',
        execute: ({ n }, ctx) => {
          if (approval && ctx.resume === undefined)
            return ToolResults.suspended('lookup', 'needs approval', {
              suspension: { id: `s-${ctx.callId}`, action: 'confirm', message: 'look it up?' },
              pending: { id: ctx.callId, name: 'lookup', arguments: { n } },
              resume_mode: 'replay_tool_call',
            });
          lookups.n++;
          return ToolResults.success('lookup', { found: n });
        },
      }),
    )
    .withPlugin(plugin.name, plugin)
    // The run's own agent may not look things up; the agent it hands over to may.
    .withAgentSpec({
      id: 'desk',
      model: 'm',
      system_prompt: 'You are the front desk.',
      plugin_ids: ['agent_handoff'],
      excluded_tools: ['lookup'],
      sections: { tool_execution: { recovery: { hand_over: { mode: 'replay_safe', max_attempts: 3 } } } } as never,
    })
    .withAgentSpec({
      id: 'writer',
      model: 'm2',
      system_prompt: 'You write.',
      allowed_tools: ['lookup'],
      sections: { tool_execution: { recovery: { lookup: { mode: 'replay_safe', max_attempts: 3 } } } } as never,
    })
    .build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return built.value;
}

async function writesOfWholeRun(): Promise<{ writes: number; asked: Asked[] }> {
  const store = new MemoryThreadRunStore();
  const asked: Asked[] = [];
  const r = await runtimeOn(store, asked, { n: 0 }).run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
  if (!r.ok || r.value.response !== 'back answered') throw new Error(`the whole run did not end as the writer: ${JSON.stringify(r.ok ? r.value : r.error)}`);
  return { writes: store.checkpoints.length, asked };
}

describe('a handed-over run taken up from the store', () => {
  it('the whole run, never cut off: the desk hands over, the writer looks up and answers', async () => {
    const { asked } = await writesOfWholeRun();
    expect(asked).toEqual([
      { model: 'front-model', system: 'You are the front desk.', tools: ['hand_over'], after: 'user' },
      { model: 'back-model', system: 'You write.', tools: ['lookup'], after: 'tool c1' },
      { model: 'back-model', system: 'You write.', tools: ['lookup'], after: 'tool c2' },
    ]);
  });

  it('died at each of its writes, it goes on as the writer: every inference after the handover is the writer’s, the lookup runs as the writer’s tool', async () => {
    const { writes, asked: whole } = await writesOfWholeRun();
    const seen: number[] = [];
    let seenHandedOver = false;
    for (let k = 1; k < writes - 1; k++) {
      const inner = new MemoryThreadRunStore();
      const lookups = { n: 0 };
      void runtimeOn(new DyingStore(inner, k), [], lookups).run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
      for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
      expect(inner.checkpoints).toHaveLength(k);
      const handedOver =
        (inner.checkpoints.at(-1)?.threadState.extensions['agent_handoff'] as { active_agent?: string } | undefined)?.active_agent === 'writer';
      const asked: Asked[] = [];
      const sink = new VecEventSink();
      const recovered = await runtimeOn(inner, asked, lookups).recover({ threadId: 't', runId: 'r' }, sink);
      expect(recovered.ok, `k=${k}`).toBe(true);
      if (!recovered.ok) continue;
      const result = await recovered.value.done;
      const at = `k=${k}`;
      expect(result.termination, at).toEqual({ type: 'natural_end' });
      expect(result.response, at).toBe('back answered');
      // What the recovered run asked is what the whole run asked from where it went on.
      expect(asked, at).toEqual(whole.slice(whole.length - asked.length));
      // The lookup ran as the writer's tool: its result is the tool's, never a refusal.
      const history = (await inner.loadThread('t'))?.messages ?? [];
      const lookup = history.find((m) => m.role === 'tool' && m.tool_call_id === 'c2');
      expect(lookup === undefined ? '' : messageText(lookup), at).toBe('{"found":2}');
      expect(lookups.n, at).toBeGreaterThanOrEqual(1);
      expect(checkRunInvariants(sink.events), at).toEqual([]);
      // A handover is announced where it happens: in this segment only when the store had not seen it done.
      const announced = sink.events.filter((e: AgentEvent) => e.event_type === 'activity_snapshot' && e.activity_type === 'agent_handoff');
      expect(
        announced.map((e) => (e as { content: unknown }).content),
        at,
      ).toEqual(handedOver ? [] : [{ from: 'desk', to: 'writer' }]);
      seenHandedOver ||= handedOver;
      seen.push(asked.length);
    }
    // Deaths before the handover's step ended, inside the writer's batch and after it.
    expect(new Set(seen).size).toBeGreaterThan(1);
    expect(seenHandedOver).toBe(true);
  });

  it('parked on the writer’s call and revived in a new runtime, the call it resumes is the writer’s tool, and the writer answers', async () => {
    const store = new MemoryThreadRunStore();
    const parked = await runtimeOn(store, [], { n: 0 }, true).run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink(), {
      waitForDecisions: false,
    });
    expect(parked.ok && parked.value.termination).toEqual({ type: 'suspended' });
    const asked: Asked[] = [];
    const lookups = { n: 0 };
    const sink = new VecEventSink();
    const revived = await runtimeOn(store, asked, lookups, true).revive({ threadId: 't', runId: 'r' }, sink);
    if (!revived.ok) throw new Error(JSON.stringify(revived.error));
    expect(await revived.value.parked()).toBe(true);
    const sent = revived.value.decide([{ targetId: 'c2', decision: { decision_id: 'd1', action: 'resume', result: {}, updated_at: 0 } }]);
    expect(sent.ok).toBe(true);
    const result = await revived.value.done;
    expect(result).toMatchObject({ termination: { type: 'natural_end' }, response: 'back answered' });
    expect(lookups.n).toBe(1);
    expect(asked).toEqual([{ model: 'back-model', system: 'You write.', tools: ['lookup'], after: 'tool c2' }]);
    const history = (await store.loadThread('t'))?.messages ?? [];
    const lookup = history.find((m) => m.role === 'tool' && m.tool_call_id === 'c2');
    expect(lookup === undefined ? '' : messageText(lookup)).toBe('{"found":2}');
  });

  it('a plugin’s takenUp that throws, or whose command the state refuses, ends the run taken up error, naming why', async () => {
    const Unregistered = defineStateKey<number, number>({ key: 'test.unregistered', init: () => 0, apply: (_s, u) => u, codec: z.number() });
    const cases: [string, NonNullable<RuntimePlugin['takenUp']>, string][] = [
      [
        'throws',
        () => {
          throw new Error('boom');
        },
        'plugin fragile could not take the run up: boom',
      ],
      ['refused', () => StateCommand.empty().update(Unregistered, 1), 'plugin fragile could not take the run up: unknown state key: test.unregistered'],
    ];
    for (const [name, takenUp, reason] of cases) {
      const fragile: RuntimePlugin = { name: 'fragile', register: () => undefined, takenUp };
      const runtimeWith = (store: ThreadRunStore) => {
        const built = new AgentRuntimeBuilder()
          .withEnv(deterministicEnv())
          .withProvider('front', model('front', []))
          .withModel('m', { provider: 'front', model_name: 'front-model' })
          .withThreadRunStore(store)
          .withPlugin(fragile.name, fragile)
          .withAgentSpec({ id: 'desk', model: 'm', plugin_ids: ['fragile'] })
          .build();
        if (!built.ok) throw new Error(JSON.stringify(built.error));
        return built.value;
      };
      const inner = new MemoryThreadRunStore();
      void runtimeWith(new DyingStore(inner, 1)).run({ threadId: 't', runId: 'r', messages: [Messages.user('go')] }, new VecEventSink());
      for (let i = 0; i < 50; i++) await new Promise<void>((r) => setImmediate(r));
      const stored = (inner.checkpoints.at(-1)?.runState?.extensions['__runtime.run_lifecycle'] as { step_count: number } | undefined)?.step_count;
      const sink = new VecEventSink();
      const recovered = await runtimeWith(inner).recover({ threadId: 't', runId: 'r' }, sink);
      if (!recovered.ok) throw new Error(JSON.stringify(recovered.error));
      const { termination, steps } = await recovered.value.done;
      expect(termination, name).toEqual({ type: 'error', value: reason });
      // The segment opens and ends as a stream must, and the run keeps the steps it had.
      expect(sink.events[0]?.event_type, name).toBe('run_start');
      expect(checkRunInvariants(sink.events), name).toEqual([]);
      expect(steps, name).toBe(stored);
    }
    // docs/plugins.md shows the first of them as it reads.
    expect(readFileSync(join(import.meta.dirname, '../../docs/plugins.md'), 'utf8')).toContain(`ends the run \`error\`: \`${cases[0]?.[2]}\`.`);
  });
});
