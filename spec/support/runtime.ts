import { z } from 'zod';
import type { AgentEvent } from '../../src/contract/event.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../../src/runtime/agent-runtime.ts';
import type { AgentSpecInput } from '../../src/contract/agent-spec.ts';
import { deterministicEnv, type DeterministicEnv } from '../../src/runtime/env.ts';
import { VecEventSink } from '../../src/runtime/event-sink.ts';
import type { RuntimePlugin } from '../../src/runtime/resolve.ts';
import { defineTool, ToolFailure, type Tool } from '../../src/runtime/tool.ts';
import { MemoryThreadRunStore } from '../../src/runtime/thread-run-store.ts';

export const echoTool = defineTool({
  id: 'echo',
  description: 'Echo input back',
  args: z.object({ text: z.string() }),
  execute: ({ text }) => ToolResults.success('echo', { echoed: text }),
});

export const failTool = defineTool({
  id: 'fail',
  description: 'Returns ToolResult.error',
  args: z.object({}).loose(),
  execute: () => ToolResults.error('fail', 'it failed'),
});

export const throwTool = defineTool({
  id: 'throw',
  description: 'Throws a ToolError',
  args: z.object({}).loose(),
  execute: () => {
    throw new ToolFailure({ code: 'execution_failed', message: 'boom' });
  },
});

/** Suspends itself until a decision arrives; resumed with the decision in its context. */
export const approvalTool = defineTool({
  id: 'approve',
  description: 'Needs a decision',
  args: z.object({ what: z.string() }).loose(),
  execute: (args, ctx) => {
    if (ctx.resume !== undefined) return ToolResults.success('approve', { approved: args.what, decision: ctx.resume.decision.result ?? null });
    return ToolResults.suspended('approve', 'needs approval', {
      suspension: { id: `s-${ctx.callId}`, action: 'confirm', message: `approve ${args.what}?` },
      pending: { id: ctx.callId, name: 'approve', arguments: args as never },
      resume_mode: 'replay_tool_call',
    });
  },
});

export interface Harness {
  readonly runtime: AgentRuntime;
  readonly llm: ScriptedLlm;
  readonly sink: VecEventSink;
  readonly env: DeterministicEnv;
  readonly store: MemoryThreadRunStore;
}

export function harness(
  script: readonly ScriptStep[],
  options: { readonly spec?: Partial<AgentSpecInput>; readonly tools?: readonly Tool[]; readonly plugins?: readonly RuntimePlugin[] } = {},
): Harness {
  const llm = new ScriptedLlm(script);
  const env = deterministicEnv();
  const store = new MemoryThreadRunStore();
  const builder = new AgentRuntimeBuilder()
    .withEnv(env)
    .withProvider('scripted', llm)
    .withModel('m', { provider: 'scripted', model_name: 'scripted-model' })
    .withThreadRunStore(store)
    .withAgentSpec({ id: 'agent', model: 'm', system_prompt: 'be brief', plugin_ids: (options.plugins ?? []).map((p) => p.name), ...options.spec });
  for (const tool of options.tools ?? [echoTool, failTool, throwTool, approvalTool]) builder.withTool(tool);
  for (const plugin of options.plugins ?? []) builder.withPlugin(plugin.name, plugin);
  const built = builder.build();
  if (!built.ok) throw new Error(JSON.stringify(built.error));
  return { runtime: built.value, llm, sink: new VecEventSink(), env, store };
}

export const types = (events: readonly AgentEvent[]): string[] => events.map((e) => e.event_type);

/** Yields to the event loop until `condition` holds (bounded). */
export async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise<void>((r) => setImmediate(r));
  if (!condition()) throw new Error('condition never held');
}

/** A deterministic env whose ids are prefixed with `name`: another instance's (or process's) ids differ, as real ids do. */
export function namedEnv(name: string): DeterministicEnv {
  const env = deterministicEnv();
  const ids = env.ids;
  return { ...env, ids: { ...ids, next: (kind: string) => `${name}-${ids.next(kind)}` } };
}
