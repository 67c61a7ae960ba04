import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { createHttpApp } from '../server/http.ts';
import { withGzip } from '../server/compress.ts';
import { Mailbox } from '../server/mailbox.ts';
import { DEFAULT_CONNECTION_LIMITS, listen, type ConnectionLimits, type RunningServer } from '../server/node.ts';
import { savedConfig } from '../server/config-routes.ts';
import { recoverRuns, resumeLeftRunning, runsLeftRunning } from '../server/recovery.ts';
import { fullCollection, IdleCollector } from '../server/idle-collector.ts';
import { RunRegistry, type ConcurrencyPolicy } from '../server/run-registry.ts';
import { openBus } from '../stores/index.ts';
import type { ModelEntry } from '../runtime/resolve.ts';
import { loadServeConfig, type ServeConfig } from './serve-config.ts';
import { addConfigured, configBesideApp, connectConfiguredMcp } from './config-runtime.ts';
import { DEFAULT_STORE, DEMO_QUESTION, demoAgentModel, storeOf } from './serve-parts.ts';
import { checkOrigins, LOOPBACK } from '../server/access.ts';
import { hostname } from 'node:os';
import { demoAgent, DEMO_TOOLS, workspaceTools } from './demo.ts';
import type { Io } from './run-command.ts';
import { buildFailure, choiceOf, CliFailure, parseCommand, runCli, stringOf, stringsOf, UsageError, type CommandSpec, type ParsedArgs } from './args.ts';
import { EXIT } from './exit.ts';
import { ServedRecorder } from '../replay/served.ts';
import { OBSERVABILITY_PLUGIN_ID, observabilityPlugin } from '../plugins/observability/plugin.ts';
import { openTelemetry } from './otel-setup.ts';
import { inspectorRoutes } from '../inspector/routes.ts';
import { createLogger, errorFields, hideUrlPasswords, LOG_FORMATS, LOG_LEVELS, SecretValues, secretsOf, type LogFormat, type LogLevel } from '../server/log.ts';
import { a2aBackend } from '../runtime/a2a-backend.ts';
import { serveOutbound } from './serve-outbound.ts';
import type { AgentRuntime } from '../runtime/agent-runtime.ts';
import type { BuildError } from '../contract/errors.ts';
import type { Result } from '../contract/result.ts';
import type { Tool } from '../runtime/tool.ts';
import type { ToolDescriptor } from '../contract/tool.ts';
import type { LoadedApp } from '../app/load.ts';
import { addApp, pluginsById } from '../app/compose.ts';
import { appOption, checkApp } from './app-option.ts';
import { forwardingRuntime, watchApp } from './app-reloader.ts';
import { SERVE_USAGE } from './serve-usage.ts';

export { SERVE_USAGE };

export const SERVE_COMMAND: CommandSpec = {
  command: 'serve',
  usage: SERVE_USAGE,
  options: {
    config: { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
    store: { type: 'string' },
    model: { type: 'string' },
    'cors-origin': { type: 'string', multiple: true },
    'allowed-host': { type: 'string', multiple: true },
    insecure: { type: 'boolean' },
    policy: { type: 'string' },
    recovery: { type: 'string' },
    'lease-ms': { type: 'string' },
    'sweep-ms': { type: 'string' },
    'log-level': { type: 'string' },
    'log-format': { type: 'string' },
    record: { type: 'string' },
    otel: { type: 'string' },
    'otel-content': { type: 'boolean' },
    app: { type: 'string' },
  },
};

export { DEFAULT_STORE, demoAgentModel, demoModel } from './serve-parts.ts';

export interface ServePlan {
  /** The user's app (`--app FILE`): served in place of the demo agent. */
  readonly app?: LoadedApp;
  readonly config?: string;
  readonly file?: ServeConfig;
  readonly port: number;
  readonly host: string;
  readonly store: string;
  /** Where the store was named: `--store`, the config file's field, or the default. */
  readonly storeFrom: string;
  readonly model?: string;
  /** Where the model was named: `--model` or the config file's field. */
  readonly modelFrom: string;
  readonly corsOrigins: readonly string[];
  readonly allowedHosts: readonly string[];
  /** Bind a non-loopback address without API tokens. */
  readonly insecure: boolean;
  readonly policy: ConcurrencyPolicy;
  /** A run a previous process left running: resume it from its last durable point, or interrupt it (`--recovery`, config `server.recovery`). */
  readonly recovery: 'resume' | 'interrupt';
  readonly leaseMs?: number;
  readonly sweepMs?: number;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** Bytes a stream's client may leave unread before it is dropped (config `server.max_follower_bytes`). */
  readonly maxFollowerBytes?: number;
  /** Quiet time before a full collection gives memory back, 0: never (config `server.idle_gc_ms`, default 1000). */
  readonly idleGcMs: number;
  /** Where a transcript of every run served is written (`--record DIR`). */
  readonly record?: string;
  /** The OTLP/HTTP traces endpoint spans are exported to (`--otel URL`; else `OTEL_EXPORTER_OTLP_ENDPOINT`). */
  readonly otel?: string;
  /** Whether spans carry messages, tool arguments and results (`--otel-content`, config `server.otel_content`). */
  readonly otelContent: boolean;
  /** Requests handled at once before one more is answered 503 (config `server.max_concurrent_requests`, default 100). */
  readonly maxConcurrentRequests: number;
  /** Frames each thread keeps for reconnects (config `server.replay_buffer_capacity`, default 1024). */
  readonly replayBufferCapacity?: number;
  /** How long SIGINT/SIGTERM's shutdown may take before the process exits anyway (config `server.shutdown.timeout_secs`, default 15 s). */
  readonly shutdownMs: number;
  /** Whether the A2A agent card takes the public address from X-Forwarded-Host / -Proto (config `server.trust_proxy`). */
  readonly trustProxy: boolean;
  /** What a connection may cost (config `server.headers_timeout_ms`, `request_timeout_ms`, `max_connections`). */
  readonly connections: ConnectionLimits;
}

/** Requests `awaken serve` handles at once by default (the original's `max_concurrent_requests`). */
export const DEFAULT_MAX_CONCURRENT_REQUESTS = 100;
/** The whole shutdown's bound by default, in seconds; the runs in flight get two thirds of it to end. */
export const DEFAULT_SHUTDOWN_SECS = 15;

/** How long the runs in flight are given to end at shutdown: two thirds of its bound, the rest for streams, the store and the exporters. */
export const shutdownGraceMs = (shutdownMs: number): number => Math.floor((shutdownMs * 2) / 3);

const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);

function portOf(text: string, from: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) throw new UsageError(`${from} must be a port number 0..65535, not '${text}'`);
  return Number(text);
}

function millisOf(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{1,9}$/.test(text) || Number(text) < 10) throw new UsageError(`${flag} must be a number of milliseconds ≥ 10, not '${text}'`);
  return Number(text);
}

/**
 * What `awaken serve` is asked to do: flags first, then the `PORT` and `HOST` environment
 * variables, then the config file's `server` section, then the defaults. A mistake is a
 * `CliFailure` (a usage mistake, or a config file that cannot be read or is wrong).
 */
export function servePlanOf(args: ParsedArgs, env: NodeJS.ProcessEnv = process.env, app?: LoadedApp): ServePlan {
  const configPath = stringOf(args, 'config');
  // Beside an app, the file is read with the app's ids and the app checked against it.
  const file = app !== undefined ? configBesideApp(app, configPath) : configPath === undefined ? undefined : loadServeConfig(configPath);
  if (app !== undefined && stringOf(args, 'model') !== undefined)
    throw new UsageError("--model sets the demo agent's model; with --app the app's models answer");
  const portFlag = stringOf(args, 'port');
  const portEnv = nonEmpty(env['PORT']);
  const port = portFlag !== undefined ? portOf(portFlag, '--port') : portEnv !== undefined ? portOf(portEnv, 'PORT') : (file?.server.port ?? 3000);
  const corsFlags = stringsOf(args, 'cors-origin');
  const origins = checkOrigins(corsFlags.length > 0 ? corsFlags : (file?.server.cors?.origins ?? []));
  if (typeof origins === 'string') {
    if (corsFlags.length > 0) throw new UsageError(`--cors-origin: ${origins}`);
    throw new CliFailure(`${configPath ?? ''}: server.cors.origins: ${origins}`, EXIT.data);
  }
  const hostFlags = stringsOf(args, 'allowed-host');
  const leaseMs = millisOf(stringOf(args, 'lease-ms'), '--lease-ms') ?? file?.server.lease_ms;
  const sweepMs = millisOf(stringOf(args, 'sweep-ms'), '--sweep-ms') ?? file?.server.sweep_ms;
  const model = stringOf(args, 'model') ?? file?.server.model;
  const otel = stringOf(args, 'otel') ?? file?.server.otel;
  const connections = connectionLimitsOf(file, configPath ?? '');
  return {
    ...(app !== undefined ? { app } : {}),
    ...(configPath !== undefined ? { config: configPath } : {}),
    ...(file !== undefined ? { file } : {}),
    port,
    host: stringOf(args, 'host') ?? nonEmpty(env['HOST']) ?? file?.server.host ?? '127.0.0.1',
    store: stringOf(args, 'store') ?? file?.server.store ?? DEFAULT_STORE,
    storeFrom: stringOf(args, 'store') !== undefined ? '--store' : file?.server.store !== undefined ? `${configPath ?? ''}: server.store` : 'the default store',
    ...(model !== undefined ? { model } : {}),
    modelFrom: stringOf(args, 'model') !== undefined ? '--model' : `${configPath ?? ''}: server.model`,
    corsOrigins: origins,
    allowedHosts: hostFlags.length > 0 ? hostFlags : (file?.server.allowed_hosts ?? []),
    insecure: args.values['insecure'] === true,
    policy: choiceOf(args, 'policy', ['reject', 'supersede'] as const) ?? file?.server.policy ?? 'reject',
    recovery: choiceOf(args, 'recovery', ['resume', 'interrupt'] as const) ?? file?.server.recovery ?? 'interrupt',
    ...(leaseMs !== undefined ? { leaseMs } : {}),
    ...(sweepMs !== undefined ? { sweepMs } : {}),
    logLevel: choiceOf(args, 'log-level', LOG_LEVELS) ?? file?.server.log?.level ?? 'info',
    logFormat: choiceOf(args, 'log-format', LOG_FORMATS) ?? file?.server.log?.format ?? 'pretty',
    ...(file?.server.max_follower_bytes !== undefined ? { maxFollowerBytes: file.server.max_follower_bytes } : {}),
    idleGcMs: file?.server.idle_gc_ms ?? 1000,
    ...(stringOf(args, 'record') !== undefined ? { record: stringOf(args, 'record') as string } : {}),
    ...(otel !== undefined ? { otel } : {}),
    otelContent: args.values['otel-content'] === true || (file?.server.otel_content ?? false),
    maxConcurrentRequests: file?.server.max_concurrent_requests ?? DEFAULT_MAX_CONCURRENT_REQUESTS,
    ...(file?.server.replay_buffer_capacity !== undefined ? { replayBufferCapacity: file.server.replay_buffer_capacity } : {}),
    shutdownMs: (file?.server.shutdown?.timeout_secs ?? DEFAULT_SHUTDOWN_SECS) * 1000,
    trustProxy: file?.server.trust_proxy ?? false,
    connections,
  };
}

/** The connection limits of a config file's `server` section over the defaults; the headers' time is within the request's. */
function connectionLimitsOf(file: ServeConfig | undefined, configPath: string): ConnectionLimits {
  const server = file?.server;
  const requestTimeoutMs = server?.request_timeout_ms ?? DEFAULT_CONNECTION_LIMITS.requestTimeoutMs;
  const headersTimeoutMs = server?.headers_timeout_ms ?? Math.min(DEFAULT_CONNECTION_LIMITS.headersTimeoutMs, requestTimeoutMs);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new CliFailure(
      `${configPath}: server.headers_timeout_ms: ${headersTimeoutMs} is longer than server.request_timeout_ms (${requestTimeoutMs}), which the headers are part of`,
      EXIT.data,
    );
  }
  return { headersTimeoutMs, requestTimeoutMs, maxConnections: server?.max_connections ?? DEFAULT_CONNECTION_LIMITS.maxConnections };
}

/** The plan of an `awaken serve` command line, or `'help'`; a mistake is a `CliFailure`. */
export function parseServeArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServePlan | 'help' {
  const args = parseCommand(SERVE_COMMAND, argv);
  return args === 'help' ? 'help' : servePlanOf(args, env);
}

/**
 * The hosts a request may name: the configured ones, and the interface bound when it is a name or
 * an address of its own; bound to every interface (0.0.0.0, ::) with none configured, any host.
 */
export function allowedHostsOf(plan: { readonly host: string; readonly allowedHosts: readonly string[] }): string[] {
  const wildcard = plan.host === '0.0.0.0' || plan.host === '::' || plan.host === '[::]';
  if (wildcard) return plan.allowedHosts.length > 0 ? [...plan.allowedHosts] : ['*'];
  return [...plan.allowedHosts, plan.host];
}

/** `awaken serve`: the HTTP server on a durable store, until SIGINT/SIGTERM. */
export function serveCommand(argv: readonly string[], io: Io, version: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return runCli(SERVE_COMMAND, argv, io, async (args) => {
    const appFile = stringOf(args, 'app');
    return serve(servePlanOf(args, env, appFile === undefined ? undefined : await appOption(appFile)), io, version, env);
  });
}

/**
 * The API tokens of a serve: `AWAKEN_API_TOKEN` (principal `default`) and the config file's
 * `server.auth.tokens` (each read from its variable, which must be set).
 */
export function apiTokensOf(plan: Pick<ServePlan, 'file' | 'config'>, env: NodeJS.ProcessEnv): Map<string, string> {
  const tokens = new Map<string, string>();
  const single = env['AWAKEN_API_TOKEN'];
  if (single !== undefined && single !== '') tokens.set(single, 'default');
  (plan.file?.server.auth?.tokens ?? []).forEach((t, i) => {
    const value = env[t.token_env];
    if (value === undefined || value.length < 16) {
      throw new CliFailure(
        `${plan.config ?? ''}: server.auth.tokens[${i}].token_env: ${t.token_env} is ${value === undefined || value === '' ? 'not set' : 'shorter than 16 characters'}`,
        EXIT.data,
      );
    }
    tokens.set(value, t.principal);
  });
  return tokens;
}

/** What `awaken dev` adds to a serve: the app is watched and loaded again when its files change. */
export interface DevOptions {
  readonly watch: true;
}

export async function serve(plan: ServePlan, io: Io, version: string, env: NodeJS.ProcessEnv, dev?: DevOptions): Promise<number> {
  const file = plan.file;
  const tokens = apiTokensOf(plan, env);
  if (!LOOPBACK.has(plan.host) && !plan.host.startsWith('127.') && tokens.size === 0 && !plan.insecure) {
    throw new UsageError(
      `refusing to bind ${plan.host} without API tokens: anyone reaching it could read and drive every thread; set AWAKEN_API_TOKEN (or server.auth.tokens), or pass --insecure`,
    );
  }
  // Every URL the configuration names is reached through one guard (docs/server.md → Outbound settings).
  const outbound = serveOutbound(file, env);
  // With an app its agents are served, not the demo agent (whose model is not needed then).
  const model = plan.app === undefined ? await demoAgentModel(plan.model, env, plan.modelFrom) : undefined;
  // --record: every port of the runtime wrapped once; each run's traffic goes to its own transcript.
  // The workspace of `Read` / `Write` is the run's thread owner's (the store below records owners).
  const builtInTools = plan.app === undefined ? [...DEMO_TOOLS, ...workspaceTools((threadId) => store.threadOwner(threadId))] : [];
  let current: LoadedApp | undefined = plan.app;
  const models = (): Record<string, ModelEntry> => ({
    ...(model !== undefined ? { demo: { provider: 'demo', model_name: model.name } } : {}),
    ...(current?.app.models ?? {}),
    ...((file?.models ?? {}) as Record<string, ModelEntry>),
  });
  // The descriptors a transcript's header lists (the app's, and the MCP servers' tools once connected).
  const mcpTools: Tool[] = [];
  const recordedTools = (): ToolDescriptor[] => [...builtInTools, ...(current?.app.tools ?? []), ...mcpTools].map((t) => t.descriptor);
  const recorder =
    plan.record === undefined
      ? undefined
      : new ServedRecorder({
          dir: plan.record,
          models,
          tools: recordedTools,
          plugins: () => new Map(current === undefined ? [] : pluginsById(current.app)),
          app: () => (current === undefined ? undefined : { file: current.file, version: current.version }),
          onWritten: (f) => logger.debug('transcript written', { file: f }),
          onError: (f, e) => logger.error('transcript not written', { file: f, ...errorFields(e) }),
        });
  const llm = (l: LlmExecutor): LlmExecutor => recorder?.llm(l) ?? l;
  const store = storeOf(plan.store, plan.storeFrom);
  // --otel or OTEL_EXPORTER_OTLP_ENDPOINT: every agent observed, its spans exported (the packages load
  // only when asked for). What it says before the logger exists is said once it does.
  const early: [level: 'info' | 'warn' | 'error', line: string][] = [];
  let say: (level: 'info' | 'warn' | 'error', line: string) => void = (level, line) => void early.push([level, line]);
  const tracing = await openTelemetry({
    ...(plan.otel !== undefined ? { url: plan.otel } : {}),
    version,
    content: plan.otelContent,
    env,
    log: (level, line) => say(level, line),
  });
  const observed = <A extends { plugin_ids?: readonly string[] | undefined }>(agent: A): A =>
    tracing === undefined || (agent.plugin_ids ?? []).includes(OBSERVABILITY_PLUGIN_ID)
      ? agent
      : { ...agent, plugin_ids: [...(agent.plugin_ids ?? []), OBSERVABILITY_PLUGIN_ID] };
  // One Env for every runtime this serve builds (an app loaded again builds a new one): runs, leases
  // and the registry keep one clock and one source of ids.
  const sharedEnv = recorder?.env(realEnv()) ?? realEnv();
  // The config's MCP servers: connected now (one that cannot be reached stops the start, naming it).
  const mcp = await connectConfiguredMcp(file, plan.config, version, outbound.guard.fetch);
  for (const [, tool] of mcp?.snapshot() ?? []) mcpTools.push(tool);
  let skills: ReturnType<typeof addConfigured> = { names: [], dirs: [], warnings: [] };
  /** A runtime of the demo agent or of `app`, with everything the config declares. */
  const runtimeOf = (app: LoadedApp | undefined): Result<AgentRuntime, BuildError> => {
    const builder = new AgentRuntimeBuilder().withEnv(sharedEnv);
    if (model !== undefined)
      builder
        .withProvider('demo', llm(model.llm))
        .withModel('demo', { provider: 'demo', model_name: model.name })
        .withAgentSpec(observed(demoAgent('demo')));
    for (const tool of builtInTools) builder.withTool(recorder?.tool(tool) ?? tool);
    if (app !== undefined) addApp(builder, app.app, { llm, agent: observed, ...(recorder !== undefined ? { tool: (t: Tool) => recorder.tool(t) } : {}) });
    for (const tool of mcpTools) builder.withTool(recorder?.tool(tool) ?? tool);
    // Delegation (docs/delegation.md): a child thread belongs to whoever owns its parent's.
    builder.withDelegation({
      beforeChild: async (child) => {
        // The parent thread's recorded owner, not the principal acting: the operator's run on bob's
        // thread delegates into a thread of bob's. A child id someone else holds is refused.
        const owner = await store.threadOwner(child.parentThreadId);
        if (owner !== undefined && (await store.claimThread(child.thread_id, owner)) !== owner)
          throw new Error(`thread ${child.thread_id} belongs to another principal`);
      },
      ...(recorder !== undefined ? { wrap: (tool) => recorder.tool(tool) } : {}),
      remote: { a2a: (endpoint, e) => a2aBackend(endpoint, e, { fetch: outbound.guard.fetch }) },
    });
    // The catalog's plugins (the skills plugins with the skills of the config's directories), the
    // config's providers, models and agents.
    skills = addConfigured(builder, file, {
      config: plan.config,
      env,
      llm,
      agent: observed,
      ...(tracing !== undefined
        ? { plugins: [observabilityPlugin(tracing.sink, { onSinkError: (e) => logger.warn('a span was not exported', errorFields(e)) })] }
        : {}),
    });
    builder.withThreadRunStore(recorder?.store(store) ?? store);
    return builder.build();
  };
  const built = runtimeOf(plan.app);
  if (!built.ok) {
    await store.close();
    await mcp?.close();
    throw buildFailure(plan.app?.file ?? plan.config ?? 'the agents', built.error);
  }
  // Under `awaken dev` the server holds the current runtime through one forwarding object: a reload
  // changes what new runs (and runs taken up again) use, runs in flight keep theirs.
  let live = built.value;
  const runtime: AgentRuntime = dev === undefined ? live : forwardingRuntime(() => live);
  recorder?.attach(runtime);
  // No line shows a credential: the environment's, the API tokens, the file's, and those config writes name later.
  const secrets = new SecretValues([...secretsOf(env), ...tokens.keys(), ...outbound.secrets]);
  const logger = createLogger({ level: plan.logLevel, format: plan.logFormat, write: io.err, now: () => runtime.env.clock.now(), secrets });
  say = (level, line) => logger[level](line);
  for (const [level, line] of early.splice(0)) say(level, line);
  try {
    await store.listThreads({ offset: 0, limit: 1 });
  } catch (e) {
    await store.close().catch(() => undefined);
    const { error, cause } = errorFields(e);
    throw new CliFailure(
      `the store ${hideUrlPasswords(plan.store)} does not answer: ${String(error)}${cause !== undefined ? ` (${String(cause)})` : ''}`,
      EXIT.unavailable,
    );
  }
  const bus = openBus(plan.store);
  let leftRunning: string[] = [];
  if (bus === undefined) {
    // One process per store: what a previous process left unfinished is marked at start (or resumed, with --recovery resume).
    const recovered = await recoverRuns(store, runtime.env.clock.now(), { resume: plan.recovery === 'resume' });
    if (recovered.length > 0) logger.warn(`marked ${recovered.length} run(s) left unfinished by a previous process as interrupted`, { runs: recovered.length });
    if (plan.recovery === 'resume') leftRunning = await runsLeftRunning(store, runtime.env.clock.now());
  }
  const consumer = `${hostname()}:${process.pid}`;
  // A quiet server gives back what a burst left (runs, clients that stopped reading and left).
  const gc = plan.idleGcMs > 0 ? fullCollection() : undefined;
  const collector =
    gc === undefined
      ? undefined
      : new IdleCollector(
          () => {
            gc();
            setTimeout(gc, 200).unref();
          },
          () => registry.liveRuns > 0,
          { delayMs: plan.idleGcMs, minSpacingMs: Math.max(5 * plan.idleGcMs, 2_000) },
        );
  const registry: RunRegistry = new RunRegistry(runtime, store, {
    policy: plan.policy,
    logger,
    // Run leases: a dead instance's thread is free again within the lease and a sweep.
    leases: { owner: consumer, ttlMs: plan.leaseMs ?? 10_000, sweepMs: plan.sweepMs ?? 5_000 },
    ...(bus !== undefined ? { bus } : {}),
    ...(plan.maxFollowerBytes !== undefined ? { maxFollowerBytes: plan.maxFollowerBytes } : {}),
    ...(plan.replayBufferCapacity !== undefined ? { replayBufferCapacity: plan.replayBufferCapacity } : {}),
    ...(collector !== undefined ? { onQuiet: () => collector.touch() } : {}),
    ...(recorder !== undefined ? { observer: recorder } : {}),
  });
  await registry.attachBus();
  await resumeLeftRunning(registry, leftRunning, logger);
  const mailbox = new Mailbox(store, registry, runtime.env, {
    consumer,
    logger,
    config: {
      ...(plan.leaseMs !== undefined ? { lease_ms: plan.leaseMs, lease_renewal_interval_ms: Math.max(5, Math.floor(plan.leaseMs / 3)) } : {}),
      ...(plan.sweepMs !== undefined ? { sweep_interval_ms: plan.sweepMs } : {}),
    },
  });
  const adminToken = env['AWAKEN_ADMIN_TOKEN'];
  const app = createHttpApp(
    { runtime, store, registry, mailbox },
    {
      version,
      // Under `awaken dev` the app is the configuration: a reload builds the runtime from it alone.
      ...(dev === undefined
        ? { savedConfig: await savedConfig(store) }
        : { configWritesRefused: `awaken dev serves ${plan.app?.file ?? 'the app'}: change the app (config writes are for awaken serve)` }),
      ...(mcp !== undefined ? { mcpServers: Object.keys(file?.mcp_servers ?? {}) } : {}),
      ...(adminToken !== undefined && adminToken !== '' ? { adminToken } : {}),
      processEnv: env,
      allowedHosts: allowedHostsOf(plan),
      corsOrigins: plan.corsOrigins,
      ...(tokens.size > 0 ? { auth: { tokens } } : {}),
      ...(plan.file?.server.api_key_env_allow !== undefined ? { apiKeyEnvAllow: plan.file.server.api_key_env_allow } : {}),
      configGuard: { outbound: outbound.guard, credentialOrigins: outbound.credentialOrigins, ownCredentialEnvs: outbound.ownCredentialEnvs, secrets },
      ...(plan.trustProxy ? { trustProxy: true } : {}),
      ops: {
        maxConcurrentRequests: plan.maxConcurrentRequests,
        ...(tracing?.activeStreams !== undefined ? { onStreams: (delta: number) => tracing.activeStreams?.(delta) } : {}),
      },
      logger,
    },
  );
  // The run inspector: its page and API, behind the same access control (docs/inspector.md).
  app.route(
    '/',
    inspectorRoutes({
      store,
      ...(plan.record !== undefined ? { recordDir: plan.record } : {}),
      ...(env['AWAKEN_INSPECTOR_ASSETS'] !== undefined && env['AWAKEN_INSPECTOR_ASSETS'] !== '' ? { assetsDir: env['AWAKEN_INSPECTOR_ASSETS'] } : {}),
    }),
  );
  let server: RunningServer;
  try {
    // Whole answers gzip-compressed for clients that take it; streams go out as they are.
    server = await listen(withGzip(app), {
      port: plan.port,
      hostname: plan.host,
      ...plan.connections,
      onRefused: (refused) => logger.warn(`connections refused: ${plan.connections.maxConnections} are open (server.max_connections)`, { refused }),
    });
  } catch (e) {
    await bus?.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    const code = (e as { code?: string }).code;
    const port = `port ${plan.port} on ${plan.host}`;
    if (code === 'EADDRINUSE') throw new CliFailure(`${port} is in use (another awaken serve?): choose another with --port or PORT`, EXIT.unavailable);
    if (code === 'EACCES') throw new CliFailure(`${port} needs privileges this process does not have: choose a port above 1023`, EXIT.unavailable);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new CliFailure(`cannot bind ${plan.host}: no such interface on this machine`, EXIT.unavailable);
    throw e;
  }
  registry.startLeases();
  mailbox.start();
  if (model !== undefined) logger.info(`model: ${model.note}`);
  if (plan.app !== undefined) logger.info(`app: ${plan.app.file} (${plan.app.version}): agents ${plan.app.app.agents.map((a) => a.id).join(', ') || 'none'}`);
  const watcher =
    dev === undefined || plan.app === undefined
      ? undefined
      : watchApp(plan.app, {
          logger,
          check: (loaded) =>
            checkApp(
              loaded,
              file === undefined
                ? undefined
                : { file: plan.config as string, agents: file.agents.map((a) => a.id as string), models: file.models, providers: Object.keys(file.providers) },
            ),
          build: (loaded) => {
            const next = runtimeOf(loaded);
            return next.ok ? next : { ok: false as const, error: buildFailure(loaded.file, next.error).message };
          },
          swap: async (loaded, next) => {
            const before = current;
            current = loaded;
            live = next;
            const released = await registry.releaseParked();
            return { released, inFlight: registry.liveRuns, before };
          },
        });
  for (const w of skills.warnings) logger.warn(`skill skipped: ${w}`);
  if (skills.dirs.length > 0) logger.info(`skills: ${skills.names.join(', ') || 'none'} (from ${skills.dirs.join(', ')})`);
  logger.info(`listening on ${server.url}`, {
    store: store.kind,
    policy: plan.policy,
    consumer,
    shared: bus !== undefined,
    auth: tokens.size > 0 ? `${tokens.size} API token(s)` : 'open',
    version,
  });
  logger.info(
    `inspector: ${server.url}/inspector/${plan.record === undefined ? ' (start with --record DIR to see run timelines)' : ` (timelines of the runs recorded in ${plan.record})`}`,
  );
  logger.info(
    `browsers: pages on localhost, 127.0.0.1 and [::1]${plan.corsOrigins.length > 0 ? ` and ${plan.corsOrigins.join(', ')}` : ''} may call the API (--cors-origin adds more)`,
  );
  logger.info(
    `try  curl -N ${server.url}/v1/runs -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"${plan.model === undefined && plan.app === undefined ? DEMO_QUESTION : 'hello'}"}]}'`,
  );
  await new Promise<void>((done) => {
    const stop = (): void => done();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  // Bounded (server.shutdown.timeout_secs): runs get two thirds of it to end after their cancel.
  logger.info('shutting down: no new runs; cancelling the runs in flight', { timeout_s: plan.shutdownMs / 1000 });
  const hard = setTimeout(() => {
    logger.error(`shutdown took longer than ${plan.shutdownMs / 1000} s (server.shutdown.timeout_secs): exiting`);
    process.exit(EXIT.ok);
  }, plan.shutdownMs);
  hard.unref();
  collector?.close();
  watcher?.close();
  await registry.shutdown({ graceMs: shutdownGraceMs(plan.shutdownMs) });
  await mailbox.stop();
  await server.close();
  await bus?.close();
  await store.close();
  await mcp?.close();
  await tracing?.shutdown().catch((e: unknown) => logger.warn('spans not exported at shutdown', errorFields(e)));
  clearTimeout(hard);
  logger.info('stopped');
  return EXIT.ok;
}
