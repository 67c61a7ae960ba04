import { z } from 'zod';
import { pendingClientResult, ToolDescriptorSchema, type ToolDescriptor } from '../contract/tool.ts';
import { defineStateKey } from '../core/state/state-key.ts';
import type { ResolvedAgent } from './resolve.ts';
import type { Tool } from './tool.ts';

/**
 * Tools a client runs (seed 001 §7.2, seed 003 `PendingClient`): the model is offered them like any
 * tool, and a call to one parks the run until the client sends the call's result back with its next
 * request. Nothing runs here, so there is nothing to run twice: a call taken up after a crash only
 * asks again (`replay_safe`).
 */

/** A tool the client runs: its call suspends for the client, and the client's answer is its result. */
export function clientTool(descriptor: ToolDescriptor): Tool {
  return {
    descriptor,
    recovery: 'replay_safe',
    // Resumed, the call is not run again: its ticket's mode makes the client's answer its result
    // (`decisionResult`, in the batch).
    execute: (args, ctx) => pendingClientResult({ id: ctx.callId, name: ctx.toolName, arguments: args }),
  };
}

/**
 * `__runtime.client_tools`: the tools the run's client declared, kept with the run (run-scoped and
 * persistent) so that a run parked on one and taken up by another process still offers them and
 * still takes their results.
 */
export const ClientToolsKey = defineStateKey<readonly ToolDescriptor[], readonly ToolDescriptor[]>({
  key: '__runtime.client_tools',
  init: () => [],
  apply: (_s, u) => u,
  codec: z.array(ToolDescriptorSchema) as z.ZodType<readonly ToolDescriptor[]>,
});

/** The first client tool that has the id of one of the agent's own tools, if any (such a request is refused). */
export function clientToolClash(
  serverTools: ReadonlyMap<string, unknown>,
  client: readonly ToolDescriptor[],
): { readonly index: number; readonly id: string } | undefined {
  const index = client.findIndex((d) => serverTools.has(d.id));
  return index < 0 ? undefined : { index, id: (client[index] as ToolDescriptor).id };
}

/** Why a run with a client tool named as one of its agent's tools does not start. */
export const clientClashMessage = (toolId: string, agentId: string): string =>
  `client tool '${toolId}' has the name of a tool of agent '${agentId}': a client tool may not take a server tool's name`;

/** `resolved` with the client's tools offered after its own (a clash is refused before a run starts: the agent's tool is kept). */
export function withClientTools(resolved: ResolvedAgent, client: readonly ToolDescriptor[]): ResolvedAgent {
  if (client.length === 0) return resolved;
  const tools = new Map(resolved.tools);
  for (const d of client) if (!tools.has(d.id)) tools.set(d.id, clientTool(d));
  return { ...resolved, tools };
}
