import { AgentRuntimeBuilder } from '../runtime/agent-runtime.ts';
import { realEnv } from '../runtime/env.ts';
import type { LlmExecutor } from '../runtime/llm.ts';
import { createHttpApp } from '../server/http.ts';
import { withGzip } from '../server/compress.ts';
import { Mailbox } from '../server/mailbox.ts';
import { DEFAULT_MAILBOX_CONFIG, mailboxConfigProblem, type MailboxConfig } from '../core/mailbox/job.ts';
import { listen, type RunningServer } from '../server/node.ts';
import { savedConfig } from '../server/config-routes.ts';
import { agentDigestOf } from '../server/agent-digest.ts';
import { recoverRuns, resumeLeftRunning, runsLeftRunning } from '../server/recovery.ts';
import { fullCollection, IdleCollector } from '../server/idle-collector.ts';
import { RunRegistry } from '../server/run-registry.ts';
import { openBus } from '../stores/index.ts';
import type { ModelEntry } from '../runtime/resolve.ts';
import { addConfigured, connectConfiguredMcp } from './config-runtime.ts';
import { DEMO_QUESTION, demoAgentModel, storeOf } from './serve-parts.ts';
import { LOOPBACK } from '../server/access.ts';
import { hostname } from 'node:os';
import { demoAgent, DEMO_TOOLS, workspaceTools } from './demo.ts';
import type { Io } from './run-command.ts';
import { buildFailure, CliFailure, runCli, stringOf, UsageError } from './args.ts';
import { EXIT } from './exit.ts';
import { ServedRecorder } from '../replay/served.ts';
import { OBSERVABILITY_PLUGIN_ID, observabilityPlugin } from '../plugins/observability/plugin.ts';
import { openTelemetry } from './otel-setup.ts';
import { inspectorRoutes } from '../inspector/routes.ts';
import { createLogger, errorFields, hideUrlPasswords, SecretValues, secretsOf } from '../server/log.ts';
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

import { allowedHostsOf, SERVE_COMMAND, servePlanOf, shutdownGraceMs, type ServePlan } from './serve-plan.ts';
export {
  allowedHostsOf,
  DEFAULT_MAX_CONCURRENT_REQUESTS,
  DEFAULT_SHUTDOWN_SECS,
  parseServeArgs,
  SERVE_COMMAND,
  servePlanOf,
  shutdownGraceMs,
  type ServePlan,
} from './serve-plan.ts';
export { DEFAULT_STORE, demoAgentModel, demoModel } from './serve-parts.ts';

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

/**
 * The mailbox's settings: the defaults, what `--lease-ms` and `--sweep-ms` derive, then the config's
 * `mailbox:` keys. Settings that cannot work together are refused, naming the key the file set.
 */
export function mailboxConfigOf(plan: Pick<ServePlan, 'file' | 'config' | 'leaseMs' | 'sweepMs'>): MailboxConfig {
  const { client_tool_timeout_ms: _client, ...timings } = plan.file?.mailbox ?? {};
  const set = Object.fromEntries(Object.entries(timings).filter(([, v]) => v !== undefined)) as Partial<MailboxConfig>;
  const config: MailboxConfig = {
    ...DEFAULT_MAILBOX_CONFIG,
    // A job's claim outlasts its thread's lease three times (10 s and 30 s by default): a dead
    // instance's run is taken up (and its job acknowledged) before the job could be claimed again.
    // The renewal comes before either lease ends, whatever `--lease-ms` says.
    ...(plan.leaseMs !== undefined
      ? {
          lease_ms: 3 * plan.leaseMs,
          lease_renewal_interval_ms: Math.min(Math.max(5, plan.leaseMs), 3 * plan.leaseMs - 1),
          suspended_lease_ms: Math.max(DEFAULT_MAILBOX_CONFIG.suspended_lease_ms, 3 * plan.leaseMs),
        }
      : {}),
    ...(plan.sweepMs !== undefined ? { sweep_interval_ms: plan.sweepMs } : {}),
    ...set,
  };
  const problem = mailboxConfigProblem(config);
  if (problem !== undefined) {
    const key = problem.keys.find((k) => set[k] !== undefined) ?? problem.keys[0];
    throw new CliFailure(`${plan.config ?? 'the config'}: mailbox.${key}: ${problem.message}`, EXIT.data);
  }
  return config;
}

/** What `awaken dev` adds to a serve: the app is watched and loaded again when its files change. */
export interface DevOptions {
  readonly watch: true;
}

export async function serve(plan: ServePlan, io: Io, version: string, env: NodeJS.ProcessEnv, dev?: DevOptions): Promise<number> {
  const file = plan.file;
  const tokens = apiTokensOf(plan, env);
  const mailboxSettings = mailboxConfigOf(plan);
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
  const store = storeOf(plan.store, plan.storeFrom, env);
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
  // Unique to this process, not only to the host and pid: a restarted container keeps both, and must
  // not renew (or be fenced as) its dead predecessor's leases.
  const consumer = `${hostname()}:${process.pid}:${runtime.env.ids.next('instance').slice(-12)}`;
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
    recovery: plan.recovery,
    codeVersion: () => current?.version,
    ...(bus !== undefined ? { bus } : {}),
    ...(plan.maxFollowerBytes !== undefined ? { maxFollowerBytes: plan.maxFollowerBytes } : {}),
    ...(plan.replayBufferCapacity !== undefined ? { replayBufferCapacity: plan.replayBufferCapacity } : {}),
    ...(collector !== undefined ? { onQuiet: () => collector.touch() } : {}),
    ...(recorder !== undefined ? { observer: recorder } : {}),
  });
  await registry.attachBus();
  const clientToolTimeoutMs = file?.mailbox?.client_tool_timeout_ms;
  const mailbox = new Mailbox(store, registry, runtime.env, {
    consumer,
    logger,
    config: mailboxSettings,
    ...(clientToolTimeoutMs !== undefined ? { clientToolTimeoutMs } : {}),
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
  if (bus === undefined) {
    // One process per store: what a previous process left unfinished is marked at start, or taken
    // up (as the run's agent, else --recovery, says) — once the configuration saved through the API
    // is published (createHttpApp), so that its agents and their `recovery` count too.
    const digest = (agentId: string): string | undefined => agentDigestOf(runtime.registries, agentId, current?.version);
    await recoverRuns(store, runtime.env.clock.now(), { recovery: plan.recovery, agents: runtime.registries.agents, digest, logger });
    await resumeLeftRunning(registry, await runsLeftRunning(store), logger, { store, now: runtime.env.clock.now() });
  }
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
