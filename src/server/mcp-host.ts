import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { readPluginConfig } from '../contract/agent-spec.ts';
import type { AgentEvent } from '../contract/event.ts';
import { describeAgent } from '../protocols/a2a/card.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import { McpToolConfigKey } from '../runtime/resolve.ts';
import { finishMcp, initialMcpState, transcodeMcp, type McpToolResult } from '../protocols/mcp/encoder.ts';

/** The agents a host serves, and how it runs one on a message (streaming its events to `emit`). */
export interface AgentHost {
  /** The agents as tools; `defaultMessage` makes the message optional (agent section `mcp.default_message`). */
  readonly agents: readonly { readonly id: string; readonly description: string; readonly defaultMessage?: string }[];
  run(agentId: string, message: string, emit: (event: AgentEvent) => void, signal: AbortSignal): Promise<void>;
  /** Whether a run waiting on scheduled calls goes on by itself here (a mailbox wakes them): the call then answers that it waits. */
  readonly wakesScheduled?: boolean;
}

/**
 * The agents of a runtime as MCP tools: each described by its `description` (else its system prompt),
 * with its `mcp.default_message`. A remote agent runs only as a delegate, so it is no tool.
 */
export function agentToolsOf(runtime: AgentRuntime): AgentHost['agents'] {
  return runtime.agentIds().flatMap((id) => {
    const resolved = runtime.resolve(id);
    if (!resolved.ok) return runtime.registries.agents.get(id)?.endpoint !== undefined ? [] : [{ id, description: `Awaken agent: ${id}` }];
    const mcp = readPluginConfig(resolved.value.spec, McpToolConfigKey);
    const defaultMessage = mcp.ok ? mcp.value.default_message : undefined;
    const spec = resolved.value.spec;
    return [{ id, description: spec.description?.trim() || describeAgent(spec), ...(defaultMessage !== undefined ? { defaultMessage } : {}) }];
  });
}

/** The MCP input schema of an agent tool: the message, required unless the agent has a default one. */
const inputOf = (defaultMessage: string | undefined) => ({
  message:
    defaultMessage === undefined
      ? z.string().describe('The user message to send to the agent')
      : z
          .string()
          .optional()
          .describe(`The user message to send to the agent (default: ${JSON.stringify(defaultMessage)})`),
});

/**
 * The server `mcpServer` makes (the SDK's `McpServer`), as much of it as a host needs: connect it to
 * one of the SDK's server transports (stdio, Streamable HTTP), close it. Its declared type names none
 * of the SDK's classes: their declarations need the DOM library, which a Node project does not load.
 */
export interface McpAgentServer {
  connect(transport: object): Promise<void>;
  close(): Promise<void>;
}

/**
 * An MCP server (the SDK's `McpServer`) exposing each agent as a tool taking `{message}`. A call runs
 * the agent; its events go through the MCP transcoder: progress notifications for the caller's
 * progress token while it runs, then the tool result (docs/protocols/mcp.md). Cancelling the request
 * cancels the run, and `onCancelled` tells the transport the request will get no answer.
 */
export function mcpServer(
  host: AgentHost,
  info: { readonly name: string; readonly version: string },
  hooks: { readonly onCancelled?: (requestId: string | number) => void } = {},
): McpAgentServer {
  const server = new McpServer({ name: info.name, version: info.version });
  for (const agent of host.agents) {
    server.registerTool(
      agent.id,
      { description: agent.description, inputSchema: inputOf(agent.defaultMessage) },
      async (args, extra): Promise<CallToolResult> => {
        const message = args.message ?? agent.defaultMessage ?? '';
        if (message.trim() === '') return { content: [{ type: 'text', text: 'message must not be empty' }], isError: true };
        const token = extra._meta?.progressToken;
        let state = initialMcpState({ serverWakes: host.wakesScheduled === true });
        let result: McpToolResult | undefined;
        let sent: Promise<unknown> = Promise.resolve();
        await host.run(
          agent.id,
          message,
          (event) => {
            const [next, out] = transcodeMcp(state, event);
            state = next;
            result ??= out.result;
            if (token === undefined) return;
            for (const p of out.progress) {
              sent = sent.then(() =>
                extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: p.progress, message: p.message } }),
              );
            }
          },
          extra.signal,
        );
        await sent;
        // A cancelled request gets no answer (MCP cancellation); the transport may end its stream.
        if (extra.signal.aborted) hooks.onCancelled?.(extra.requestId);
        return (result ?? finishMcp(state)) as CallToolResult;
      },
    );
  }
  return server;
}
