// What `awaken serve` is asked to do — its flags, its config file and its environment, read into one
// plan — apart from the start-up that carries the plan out (serve-command.ts).
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from '../server/node.ts';
import { DEFAULT_RECOVERY } from '../server/recovery.ts';
import type { ConcurrencyPolicy } from '../server/run-registry.ts';
import { loadServeConfig, type ServeConfig } from './serve-config.ts';
import { configBesideApp } from './config-runtime.ts';
import { DEFAULT_STORE } from './serve-parts.ts';
import { checkOrigins } from '../server/access.ts';
import { choiceOf, CliFailure, parseCommand, stringOf, stringsOf, UsageError, type CommandSpec, type ParsedArgs } from './args.ts';
import { EXIT } from './exit.ts';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../server/log.ts';
import type { RunRecovery } from '../contract/agent-spec.ts';
import type { LoadedApp } from '../app/load.ts';
import { SERVE_USAGE } from './serve-usage.ts';

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
  /** A run a previous process left running: resume it from its last durable point, or interrupt it (`--recovery`, config `server.recovery`); an agent's own `recovery` wins for its runs. */
  readonly recovery: RunRecovery;
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
    recovery: choiceOf(args, 'recovery', ['resume', 'interrupt'] as const) ?? file?.server.recovery ?? DEFAULT_RECOVERY,
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
