import { addApp } from '../app/compose.ts';
import type { LoadedApp } from '../app/load.ts';
import type { AgentSpec } from '../contract/agent-spec.ts';
import { Messages } from '../contract/message.ts';
import { a2aBackend } from '../runtime/a2a-backend.ts';
import { AgentRuntimeBuilder, type AgentRuntime } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import { MemoryThreadRunStore } from '../runtime/thread-run-store.ts';
import { agentToolsOf, mcpServer, type AgentHost } from '../server/mcp-host.ts';
import { LineStdioTransport } from '../server/stdio-transport.ts';
import { buildFailure, runCli, stringOf, UsageError, type CommandSpec, type Io } from './args.ts';
import { addConfigured, agentNamed, configBesideApp, connectConfiguredMcp } from './config-runtime.ts';
import { appOption } from './app-option.ts';
import { demoAgent, DEMO_TOOLS, workspaceTools } from './demo.ts';
import { EXIT } from './exit.ts';
import { demoRuntimes } from './run-command.ts';
import { demoAgentModel } from './serve-command.ts';
import { loadServeConfig, type ServeConfig } from './serve-config.ts';
import { serveOutbound } from './serve-outbound.ts';
import { MCP_USAGE } from './usages.ts';

export { MCP_USAGE };

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
export async function configHost(
  path: string,
  model: string | undefined,
  env: NodeJS.ProcessEnv,
  version: string,
): Promise<{ readonly host: AgentHost; close(): Promise<void> }> {
  const file = loadServeConfig(path);
  const demo = await demoAgentModel(model ?? file.server.model, env, model !== undefined ? '--model' : `${path}: server.model`);
  const builder = new AgentRuntimeBuilder()
    .withEnv(realEnv())
    .withProvider('demo', demo.llm)
    .withModel('demo', { provider: 'demo', model_name: demo.name })
    .withAgentSpec(demoAgent('demo'));
  for (const tool of [...DEMO_TOOLS, ...workspaceTools()]) builder.withTool(tool);
  return hostOn(builder, file, path, env, version, path);
}

/**
 * A host on `builder` finished as `awaken serve` finishes its runtime, in memory: the file's MCP
 * servers' tools, remote delegates, the catalog's plugins and what the file declares. `close` stops
 * the MCP servers; `only` serves that agent alone; a build that fails names `where`.
 */
async function hostOn(
  builder: AgentRuntimeBuilder,
  file: ServeConfig | undefined,
  path: string | undefined,
  env: NodeJS.ProcessEnv,
  version: string,
  where: string,
  only?: string,
): Promise<{ readonly host: AgentHost; close(): Promise<void> }> {
  // The file's URLs are reached as awaken serve reaches them: through its outbound guard.
  const outbound = serveOutbound(file, env);
  const mcp = await connectConfiguredMcp(file, path, version, outbound.guard.fetch);
  for (const [, tool] of mcp?.snapshot() ?? []) builder.withTool(tool);
  builder.withDelegation({ remote: { a2a: (endpoint, e) => a2aBackend(endpoint, e, { fetch: outbound.guard.fetch }) } });
  const close = async (): Promise<void> => {
    await mcp?.close();
  };
  let built: ReturnType<AgentRuntimeBuilder['build']>;
  try {
    // The catalog's plugins, and what the file declares (nothing without one).
    addConfigured(builder, file, { config: path, env });
    built = builder.withThreadRunStore(new MemoryThreadRunStore()).build();
  } catch (e) {
    await close();
    throw e;
  }
  if (!built.ok) {
    await close();
    throw buildFailure(where, built.error);
  }
  return { host: runtimeHost(built.value, only), close };
}

/** A runtime's agents (or the one named `only`) as an `AgentHost`: each call a run on a new thread. */
function runtimeHost(runtime: AgentRuntime, only?: string): AgentHost {
  return {
    agents: agentToolsOf(runtime).filter((a) => only === undefined || a.id === only),
    async run(agentId, message, emit, signal) {
      const r = await runtime.run({ agentId, messages: [Messages.user(message)] }, { emit }, { signal, waitForDecisions: false });
      if (!r.ok) emit({ event_type: 'error', message: r.error.code, code: r.error.code });
    },
  };
}

/**
 * An app's agents (with the agents of a config file beside it) as an `AgentHost`, on one runtime
 * built as `awaken serve --app` builds it (in memory, without the demo agent): each call a run on a
 * new thread. `agent` serves that one alone. `close` stops the file's MCP servers.
 */
export async function appHost(
  loaded: LoadedApp,
  agent: string | undefined,
  path: string | undefined,
  env: NodeJS.ProcessEnv,
  version: string,
): Promise<{ readonly host: AgentHost; close(): Promise<void> }> {
  const file = configBesideApp(loaded, path);
  const only =
    agent === undefined
      ? undefined
      : agentNamed([...loaded.app.agents, ...((file?.agents ?? []) as AgentSpec[])], agent, path === undefined ? loaded.file : `${loaded.file} and ${path}`).id;
  return hostOn(addApp(new AgentRuntimeBuilder().withEnv(realEnv()), loaded.app), file, path, env, version, path ?? loaded.file, only);
}

export const MCP_COMMAND: CommandSpec = {
  command: 'mcp',
  usage: MCP_USAGE,
  options: { stdio: { type: 'boolean' }, model: { type: 'string' }, agent: { type: 'string' }, config: { type: 'string' }, app: { type: 'string' } },
};

/** `awaken mcp`: the agent (or a config file's agents, or an app's) as an MCP server on stdio (its only transport here), until stdin closes. */
export async function mcpCommand(argv: readonly string[], io: Io, version: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return runCli(MCP_COMMAND, argv, io, async (args) => {
    const model = stringOf(args, 'model');
    const config = stringOf(args, 'config');
    const app = stringOf(args, 'app');
    const agent = stringOf(args, 'agent');
    if (app !== undefined && model !== undefined) throw new UsageError("--model sets the demo agent's model; with --app the app's models answer");
    if (app === undefined && config !== undefined && agent !== undefined)
      throw new UsageError("--agent names the demo agent's tool; with --config every agent of the file is a tool");
    if (app === undefined && config === undefined && model === undefined)
      throw new UsageError('--model is required (scripted:FILE or transcript:FILE), or --config awaken.yaml, or --app FILE');
    const served =
      app !== undefined
        ? await appHost(await appOption(app), agent, config, env, version)
        : config !== undefined
          ? await configHost(config, model, env, version)
          : { host: demoHost(model as string, agent ?? 'demo'), close: () => Promise.resolve() };
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
