import { Messages } from '../contract/message.ts';
import { mcpServer, type AgentHost } from '../server/mcp-host.ts';
import { LineStdioTransport } from '../server/stdio-transport.ts';
import { demoRuntimes, type Io } from './run-command.ts';

export const MCP_USAGE = `usage: awaken mcp [--stdio] --model scripted:FILE|transcript:FILE [--agent demo]

Serves the agent as an MCP tool (protocol 2025-11-25) over stdio: newline-delimited JSON-RPC on
stdin/stdout (a line that is not JSON-RPC is answered with -32700 or -32600), logs on stderr. The tool takes {message}; while the run streams it sends progress
notifications, then the result: the final text, structuredContent {termination, runId, threadId},
and isError when the run did not complete. Each call runs the model file from its start.
`;

/** The demo agent on a file-backed model, as an `AgentHost`: each call builds a fresh runtime. */
export function demoHost(model: string, agent: string): AgentHost | string {
  const runtimes = demoRuntimes(model);
  if (typeof runtimes === 'string') return runtimes;
  return {
    agents: [{ id: agent, description: `Awaken agent: ${agent} (model ${model})` }],
    async run(agentId, message, emit, signal) {
      const r = await runtimes().run({ agentId, messages: [Messages.user(message)] }, { emit }, { signal, waitForDecisions: false });
      if (!r.ok) emit({ event_type: 'error', message: r.error.code, code: r.error.code });
    },
  };
}

/** `awaken mcp`: the agent as an MCP server on stdio, until stdin closes. */
export async function mcpCommand(argv: readonly string[], io: Io, version: string): Promise<number> {
  let model: string | undefined;
  let agent = 'demo';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1];
    if (a === '--stdio') continue; // stdio is the only transport of this command (HTTP: awaken serve's /v1/mcp)
    if ((a === '--model' || a === '--agent') && v !== undefined) {
      if (a === '--model') model = v;
      else agent = v;
      i++;
    } else {
      io.err(`awaken mcp: unexpected argument ${a ?? ''}\n${MCP_USAGE}`);
      return 64;
    }
  }
  if (model === undefined) {
    io.err(`awaken mcp: --model is required\n${MCP_USAGE}`);
    return 64;
  }
  const host = demoHost(model, agent);
  if (typeof host === 'string') {
    io.err(`awaken mcp: ${host}\n`);
    return 65;
  }
  const server = mcpServer(host, { name: 'awaken-mcp', version });
  const transport = new LineStdioTransport();
  const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
  await server.connect(transport);
  await closed;
  return 0;
}
