import { Messages } from '../contract/message.ts';
import { mcpServer, type AgentHost } from '../server/mcp-host.ts';
import { LineStdioTransport } from '../server/stdio-transport.ts';
import { runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { EXIT } from './exit.ts';
import { demoRuntimes } from './run-command.ts';

export const MCP_USAGE = `usage: awaken mcp [--stdio] --model scripted:FILE|transcript:FILE [--agent demo]

Serves the agent as an MCP tool (protocol 2025-11-25) over stdio: newline-delimited JSON-RPC on
stdin/stdout (a line that is not JSON-RPC is answered with -32700 or -32600), logs on stderr. The tool takes {message}; while the run streams it sends progress
notifications, then the result: the final text, structuredContent {termination, runId, threadId},
and isError when the run did not complete. Each call runs the model file from its start.
`;

/** The demo agent on a file-backed model, as an `AgentHost`: each call builds a fresh runtime. */
export function demoHost(model: string, agent: string): AgentHost {
  const runtimes = demoRuntimes(model);
  return {
    agents: [{ id: agent, description: `Awaken agent: ${agent} (model ${model})` }],
    async run(agentId, message, emit, signal) {
      const r = await runtimes().run({ agentId, messages: [Messages.user(message)] }, { emit }, { signal, waitForDecisions: false });
      if (!r.ok) emit({ event_type: 'error', message: r.error.code, code: r.error.code });
    },
  };
}

export const MCP_COMMAND: CommandSpec = { command: 'mcp', usage: MCP_USAGE, options: { stdio: { type: 'boolean' }, model: { type: 'string' }, agent: { type: 'string' } } };

/** `awaken mcp`: the agent as an MCP server on stdio (its only transport here), until stdin closes. */
export async function mcpCommand(argv: readonly string[], io: Io, version: string): Promise<number> {
  return runCli(MCP_COMMAND, argv, io, async (args) => {
    const model = stringOf(args, 'model');
    if (model === undefined) throw new UsageError('--model is required (scripted:FILE or transcript:FILE)');
    const server = mcpServer(demoHost(model, stringOf(args, 'agent') ?? 'demo'), { name: 'awaken-mcp', version });
    const transport = new LineStdioTransport();
    const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
    await server.connect(transport);
    await closed;
    return EXIT.ok;
  });
}
