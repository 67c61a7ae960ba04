import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import { z } from 'zod';
import { Messages } from '../../src/contract/message.ts';
import { ToolResults } from '../../src/contract/tool.ts';
import { ScriptedLlm, type ScriptStep } from '../../src/providers/scripted.ts';
import { ServedRecorder } from '../../src/replay/served.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../../src/runtime/agent-runtime.ts';
import { deterministicEnv } from '../../src/runtime/env.ts';
import { defineTool } from '../../src/runtime/tool.ts';
import { RunRegistry } from '../../src/server/run-registry.ts';
import { MemoryStore } from '../../src/stores/memory.ts';

/**
 * A served, recorded run let go while parked and taken up again on other code: a registry whose
 * runtime is replaced (as `awaken dev` replaces it at a reload) over one store, with a `ServedRecorder`
 * writing a transcript per segment. The app's version is '1', then one higher at each `reload`.
 */

const approval = (version: string) =>
  defineTool({
    id: 'approve',
    description: 'Needs a decision',
    args: z.object({ what: z.string() }),
    execute: (args, ctx) =>
      ctx.resume !== undefined
        ? ToolResults.success('approve', { approved: args.what, by: version })
        : ToolResults.suspended('approve', 'needs approval', {
            suspension: { id: `s-${ctx.callId}`, action: 'confirm', message: `approve ${args.what}?` },
            pending: { id: ctx.callId, name: 'approve', arguments: args },
            resume_mode: 'replay_tool_call',
          }),
  });

export const SCRIPT: readonly ScriptStep[] = [{ tool_calls: [{ id: 'c1', name: 'approve', arguments: { what: 'deploy' } }] }, { text: 'deployed' }];

export function served(options: { readonly script?: readonly ScriptStep[] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'awaken-segments-'));
  const store = new MemoryStore();
  let app = { file: 'app.ts', version: '1' };
  const recorder = new ServedRecorder({ dir, models: { m: { provider: 'p', model_name: 'pm' } }, tools: [approval('1').descriptor], app: () => app });
  const env = recorder.env(deterministicEnv());
  // One model for both versions: it goes on where the run left it.
  const llm = recorder.llm(new ScriptedLlm(options.script ?? SCRIPT));
  const runtimeOf = (version: string): AgentRuntime => {
    const built = new AgentRuntimeBuilder()
      .withEnv(env)
      .withThreadRunStore(recorder.store(store))
      .withProvider('p', llm)
      .withModel('m', { provider: 'p', model_name: 'pm' })
      .withAgentSpec({ id: 'a', model: 'm', system_prompt: 'be brief' })
      .withTool(recorder.tool(approval(version)))
      .build();
    if (!built.ok) throw new Error(JSON.stringify(built.error));
    return built.value;
  };
  let current = runtimeOf('1');
  // What `awaken dev` gives the server: one object that is always the runtime current now.
  const runtime = new Proxy(current, {
    get: (_t, prop) => {
      const v: unknown = Reflect.get(current, prop, current);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
    },
  });
  recorder.attach(runtime);
  const registry = new RunRegistry(runtime, store, { observer: recorder });
  const reload = async (): Promise<number> => {
    app = { file: 'app.ts', version: String(Number(app.version) + 1) };
    current = runtimeOf(app.version);
    return registry.releaseParked();
  };
  return { dir, store, registry, reload };
}

/** Starts a run on `threadId` that parks on its approval; resolves once it is parked. */
export async function parked(registry: RunRegistry, threadId = 't1'): Promise<string> {
  const started = await registry.start({ threadId, messages: [Messages.user('deploy it')] });
  if (!started.ok) throw new Error(JSON.stringify(started.error));
  await vi.waitFor(() => expect(registry.waiting(threadId)?.calls.map((c) => c.callId)).toEqual(['c1']));
  return started.value.runId;
}
