import { Messages } from '../contract/message.ts';
import { a2aBackend } from '../runtime/a2a-backend.ts';
import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import { MemoryThreadRunStore } from '../runtime/thread-run-store.ts';
import { agentToolsOf, mcpServer, type AgentHost } from '../server/mcp-host.ts';
import { LineStdioTransport } from '../server/stdio-transport.ts';
import { buildFailure, runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { addConfigured, connectConfiguredMcp } from './config-runtime.ts';
import { demoAgent, DEMO_TOOLS, workspaceTools } from './demo.ts';
import { EXIT } from './exit.ts';
import { demoRuntimes } from './run-command.ts';
import { demoAgentModel } from './serve-command.ts';
import { loadServeConfig } from './serve-config.ts';
import { serveOutbound } from './serve-outbound.ts';

export const MCP_USAGE = `usage: awaken mcp [--stdio] --model scripted:FILE|transcript:FILE [--agent demo]
       awaken mcp [--stdio] --config awaken.yaml [--model M]

Serves the agent as an MCP tool (protocol 2025-11-25) over stdio: newline-delimited JSON-RPC on
stdin/stdout (a line that is not JSON-RPC is answered with -32700 or -32600), logs on stderr. The tool takes {message}; while the run streams it sends progress
notifications, then the result: the final text, structuredContent {termination, runId, threadId},
and isError when the run did not complete. Each call runs the model file from its start.

With --config, the agents of an \`awaken serve\` config file (docs/server.md) are the tools, beside
the demo agent (its model: --model, else the file's server.model, else as awaken serve picks it):
each described by its description, on the file's providers, models, plugins, skills and MCP
servers. Each call runs on a thread of its own, so a scripted model runs from its start.
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

/**
 * The agents of a config file as an `AgentHost`, on one runtime built as `awaken serve` builds it
 * (in memory): each call a run on a new thread. `close` stops the file's MCP servers.
 */
export async function configHost(path: string, model: string | undefined, env: NodeJS.ProcessEnv, version: string): Promise<{ readonly host: AgentHost; close(): Promise<void> }> {
  const file = loadServeConfig(path);
  // The file's URLs are reached as awaken serve reaches them: through its outbound guard.
  const outbound = serveOutbound(file, env);
  const demo = await demoAgentModel(model ?? file.server.model, env, model !== undefined ? '--model' : `${path}: server.model`);
  const builder = new AgentRuntimeBuilder()
    .withEnv(realEnv())
    .withProvider('demo', demo.llm)
    .withModel('demo', { provider: 'demo', model_name: demo.name })
    .withAgentSpec(demoAgent('demo'));
  for (const tool of [...DEMO_TOOLS, ...workspaceTools()]) builder.withTool(tool);
  const mcp = await connectConfiguredMcp(file, path, version, outbound.guard.fetch);
  for (const [, tool] of mcp?.snapshot() ?? []) builder.withTool(tool);
  builder.withDelegation({ remote: { a2a: (endpoint, e) => a2aBackend(endpoint, e, { fetch: outbound.guard.fetch }) } });
  const close = async (): Promise<void> => {
    await mcp?.close();
  };
  let built: ReturnType<AgentRuntimeBuilder['build']>;
  try {
    addConfigured(builder, file, { config: path, env });
    built = builder.withThreadRunStore(new MemoryThreadRunStore()).build();
  } catch (e) {
    await close();
    throw e;
  }
  if (!built.ok) {
    await close();
    throw buildFailure(path, built.error);
  }
  const runtime = built.value;
  return {
    host: {
      agents: agentToolsOf(runtime),
      async run(agentId, message, emit, signal) {
        const r = await runtime.run({ agentId, messages: [Messages.user(message)] }, { emit }, { signal, waitForDecisions: false });
        if (!r.ok) emit({ event_type: 'error', message: r.error.code, code: r.error.code });
      },
    },
    close,
  };
}

export const MCP_COMMAND: CommandSpec = {
  command: 'mcp',
  usage: MCP_USAGE,
  options: { stdio: { type: 'boolean' }, model: { type: 'string' }, agent: { type: 'string' }, config: { type: 'string' } },
};

/** `awaken mcp`: the agent (or a config file's agents) as an MCP server on stdio (its only transport here), until stdin closes. */
export async function mcpCommand(argv: readonly string[], io: Io, version: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return runCli(MCP_COMMAND, argv, io, async (args) => {
    const model = stringOf(args, 'model');
    const config = stringOf(args, 'config');
    if (config !== undefined && stringOf(args, 'agent') !== undefined) throw new UsageError('--agent names the demo agent\'s tool; with --config every agent of the file is a tool');
    if (config === undefined && model === undefined) throw new UsageError('--model is required (scripted:FILE or transcript:FILE), or --config awaken.yaml');
    const served = config !== undefined ? await configHost(config, model, env, version) : { host: demoHost(model as string, stringOf(args, 'agent') ?? 'demo'), close: () => Promise.resolve() };
    try {
      const server = mcpServer(served.host, { name: 'awaken-mcp', version });
      const transport = new LineStdioTransport();
      const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
      await server.connect(transport);
      await closed;
    } finally {
      await served.close();
    }
    return EXIT.ok;
  });
}
